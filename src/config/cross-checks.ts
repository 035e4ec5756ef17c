/**
 * Rules that span fields, which JSON Schema cannot say readably: routes must name defined
 * providers, models must be priced or free, providers need an address unless they are the demo.
 */
import type { ErrorObject } from 'ajv';
import { unitsToNano } from '../billing/money';
import { isObject } from '../json';
import type { ConfigIssue } from './config-error';
import { deriveModel, deriveProvider, type ValidatedGatewayData } from './derive';
import { withCatalogLimits } from './catalog-limits';
import type { YamlLocator } from './locate';
import { wireOf } from '../wire';
import type { CatalogLimit, GatewayConfig, ModelConfig, ModelPrice, ProtocolSetting, ProviderConfig } from './types';
import { BETA_NEEDS } from '../billing/asked-service';

/** Why a priced model needs each limit: billing holds them before it knows what a request will cost. */
const PRICED_NEEDS = {
  max_output_tokens: 'a priced model needs max_output_tokens: the most output one answer can have, which billing holds for a request that sets no limit',
  context_window: 'a priced model needs context_window: the most input one request can have, which billing holds when the billed input is not in the body (previous_response_id, file_id, server tools)',
} as const;

const ECHO_TAKES_NEITHER = 'echo answers locally and takes neither base_url nor api_key: remove this field';

/**
 * Every cross-field issue among `config`'s providers and models, positioned through `locator`.
 * `knownProviders` defaults to the providers given; with a partly invalid file it is every provider
 * id the file defines, so a route to a provider with a schema error is not also called unknown.
 */
export function crossCheck(
  config: Pick<GatewayConfig, 'providers' | 'models'> & Partial<Pick<GatewayConfig, 'payments' | 'redis' | 'catalog_limits'>>,
  locator: YamlLocator,
  knownProviders: readonly string[] = Object.keys(config.providers).sort(),
): ConfigIssue[] {
  return [
    ...Object.values(config.providers).flatMap((provider) => checkProvider(provider, locator)),
    ...Object.values(config.models).flatMap((model) => [...checkModel(model, knownProviders, locator, config.catalog_limits ?? []), ...checkKind(model, config.providers, locator)]),
    ...checkAliases(config, locator),
    ...checkPayments(config.payments, locator),
    ...checkRedis(config.redis, locator),
  ];
}

/** What a Sentinel needs to find the primary; a single server's url says all of it. */
const SENTINEL_ONLY = {
  name: 'redis.name is the master name the Sentinels monitor: it needs redis.sentinels',
  sentinel_password: 'redis.sentinel_password is the Sentinels\' own password: it needs redis.sentinels',
} as const;
const PASSWORD_WITH_URL = 'redis.password is for the servers behind redis.sentinels or redis.cluster; with redis.url the password goes in the url (redis://:password@host:port)';

/** One Redis, one Sentinel deployment or one Cluster, never two; Sentinels need the master name they watch. */
function checkRedis(redis: GatewayConfig['redis'] | undefined, locator: YamlLocator): ConfigIssue[] {
  if (redis === undefined) return [];
  const issues: ConfigIssue[] = [];
  const sentinels = redis.sentinels ?? [];
  const cluster = redis.cluster ?? [];
  // Each at its own line, in the file's order of the fields.
  const misplaced: Record<string, string | null> = {
    name: sentinels.length === 0 ? SENTINEL_ONLY.name : null,
    password: sentinels.length === 0 && cluster.length === 0 ? PASSWORD_WITH_URL : null,
    sentinel_password: sentinels.length === 0 ? SENTINEL_ONLY.sentinel_password : null,
  };
  for (const [field, message] of Object.entries(misplaced)) {
    if (message !== null && locator.has(['redis', field])) issues.push(locator.issue(['redis', field], message));
  }
  if (cluster.length > 0) {
    if (redis.url !== '') issues.push(locator.issue(['redis', 'cluster'], 'redis.url and redis.cluster are exclusive: give one server\'s url, or some nodes of the Cluster, not both'));
    if (sentinels.length > 0) issues.push(locator.issue(['redis', 'cluster'], 'redis.sentinels and redis.cluster are exclusive: a Cluster fails over by itself, without Sentinels'));
    // A brace in the prefix would become the hash tag that places every key, putting them all in one slot.
    if (/[{}]/.test(redis.key_prefix)) issues.push(locator.issue(['redis', 'key_prefix'], 'with redis.cluster the key prefix may not hold { or }: Tollgate places its keys on the Cluster\'s slots with hash tags of its own'));
    issues.push(...portIssues(cluster, ['redis', 'cluster'], locator));
  }
  if (sentinels.length === 0) return issues;
  if (redis.url !== '') {
    issues.push(locator.issue(['redis', 'sentinels'], 'redis.url and redis.sentinels are exclusive: give one server\'s url, or the Sentinels that know the primary, not both'));
  }
  if ((redis.name ?? '') === '') issues.push(locator.issue(['redis', 'sentinels'], 'redis.sentinels needs redis.name: the master name the Sentinels monitor'));
  issues.push(...portIssues(sentinels, ['redis', 'sentinels'], locator));
  return issues;
}

function portIssues(addresses: readonly string[], at: readonly string[], locator: YamlLocator): ConfigIssue[] {
  return addresses.flatMap((address, index) => {
    const port = Number(address.slice(address.lastIndexOf(':') + 1));
    return port < 1 || port > 65535 ? [locator.issue([...at, index], `port ${port} of "${address}" is outside 1..65535`)] : [];
  });
}

/** Card amounts must make sense together, and the rate must be exact in nano-units. */
function checkPayments(payments: GatewayConfig['payments'] | undefined, locator: YamlLocator): ConfigIssue[] {
  const stripe = payments?.stripe;
  if (stripe === undefined) return [];
  const at = ['payments', 'stripe'];
  const issues: ConfigIssue[] = [];
  if (stripe.min_amount > stripe.max_amount) {
    issues.push(locator.issue([...at, 'min_amount'], `min_amount (${stripe.min_amount}) is above max_amount (${stripe.max_amount})`));
  }
  stripe.presets.forEach((preset, index) => {
    if (preset < stripe.min_amount || preset > stripe.max_amount) {
      issues.push(locator.issue([...at, 'presets', index], `${preset} is outside min_amount..max_amount (${stripe.min_amount}..${stripe.max_amount})`));
    }
  });
  try {
    unitsToNano(stripe.units_per_currency_unit);
  } catch {
    issues.push(locator.issue([...at, 'units_per_currency_unit'], 'units_per_currency_unit may have at most nine decimals'));
  }
  return issues;
}

/** An alias may not be another model's id, nor belong to two models: a name must mean one model. */
function checkAliases(config: Pick<GatewayConfig, 'models'>, locator: YamlLocator): ConfigIssue[] {
  const owner = new Map<string, string>();
  const issues: ConfigIssue[] = [];
  for (const model of Object.values(config.models)) {
    (model.aliases ?? []).forEach((alias, index) => {
      const at = ['models', model.id, 'aliases', index];
      if (Object.hasOwn(config.models, alias) && alias !== model.id) {
        issues.push(locator.issue(at, `"${alias}" is the id of another model; an alias must name no other model`));
        return;
      }
      const first = owner.get(alias);
      if (first !== undefined && first !== model.id) issues.push(locator.issue(at, `"${alias}" is already an alias of model "${first}"`));
      else owner.set(alias, model.id);
    });
  }
  return issues;
}

function checkProvider(provider: ProviderConfig, locator: YamlLocator): ConfigIssue[] {
  const at = ['providers', provider.id];
  const { address } = wireOf(provider);
  if (address === 'none') {
    // Judged by what the operator wrote: api_key's default "" is indistinguishable from an explicit "".
    return ['base_url', 'api_key']
      .filter((field) => locator.has([...at, field]))
      .map((field) => locator.issue([...at, field], ECHO_TAKES_NEITHER));
  }
  const issues = settingIssues(provider, locator);
  if (!locator.has([...at, 'base_url'])) {
    if (address === 'derived') return issues;
    return [...issues, locator.issue(at, 'missing required field "base_url" (only echo providers go without one)')];
  }
  const problem = baseUrlProblem(provider.base_url);
  return problem ? [...issues, locator.issue([...at, 'base_url'], problem)] : issues;
}

const PROTOCOL_SETTINGS: readonly ProtocolSetting[] = ['api_key', 'auth_header', 'region', 'access_key_id', 'secret_access_key', 'session_token', 'project_id', 'credentials_file'];

/** Settings of another protocol written here, and required settings left empty. */
function settingIssues(provider: ProviderConfig, locator: YamlLocator): ConfigIssue[] {
  const at = ['providers', provider.id];
  const { accepted, required } = wireOf(provider).settings;
  const issues = PROTOCOL_SETTINGS.filter((field) => !accepted.includes(field) && locator.has([...at, field])).map((field) =>
    locator.issue([...at, field], `"${field}" is not a setting of ${provider.protocol} providers (they take: ${accepted.join(', ') || 'none'})`),
  );
  for (const field of required) {
    if (provider[field] === '') issues.push(locator.issue(at, `${provider.protocol} providers need "${field}"`));
  }
  return issues;
}

/** Why a base_url is unusable, or undefined when it is fine. */
function baseUrlProblem(baseUrl: string): string | undefined {
  const rule = 'must be an absolute http:// or https:// URL without query or fragment';
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return `${rule}, got ${JSON.stringify(baseUrl)}`;
  }
  // Checked on the text too: URL drops an empty "?" or "#", which would still be a typo worth reporting.
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || /[?#]/.test(baseUrl)) {
    return `${rule}, got ${JSON.stringify(baseUrl)}`;
  }
  return undefined;
}

function checkModel(model: ModelConfig, knownProviders: readonly string[], locator: YamlLocator, fromCatalog: readonly CatalogLimit[]): ConfigIssue[] {
  const at = ['models', model.id];
  const issues: ConfigIssue[] = [];
  model.routes.forEach((route, index) => {
    if (knownProviders.includes(route.provider)) return;
    const known = knownProviders.join(', ') || 'none';
    issues.push(locator.issue([...at, 'routes', index, 'provider'], `unknown provider "${route.provider}" (known: ${known})`));
  });
  if (model.price === undefined && !model.free) {
    issues.push(locator.issue(at, `model "${model.id}" needs a price (input and output per 1M tokens) or free: true`));
  }
  if (model.price !== undefined && model.free) {
    issues.push(locator.issue(at, 'price and free: true contradict each other: keep one'));
  }
  if (model.price !== undefined && model.kind === 'text') {
    // Judged by what the operator wrote: a default output limit would make every hold a guess.
    for (const field of ['input', 'output'] as const) {
      if (!locator.has([...at, 'price', field])) issues.push(locator.issue([...at, 'price'], `a text model's price needs ${field} (per 1M tokens)`));
    }
    for (const field of ['max_output_tokens', 'context_window'] as const) {
      if (locator.has([...at, field]) || fromCatalog.some((limit) => limit.model === model.id && limit.field === field)) continue;
      issues.push(locator.issue(at, `${PRICED_NEEDS[field]}, and the catalog has none for it`));
    }
    issues.push(...checkBetas(model.price, [...at, 'price', 'betas'], locator));
  }
  return issues;
}

/**
 * An image model is served natively by the OpenAI protocol only (nothing translates the Images API),
 * and is priced by its image tokens or per image; per-image prices and a token table are an image
 * model's alone.
 */
function checkKind(model: ModelConfig, providers: GatewayConfig['providers'], locator: YamlLocator): ConfigIssue[] {
  const at = ['models', model.id];
  const issues: ConfigIssue[] = [];
  if (model.kind === 'text') {
    if (model.price !== undefined && Object.keys(model.price.per_image).length > 0) {
      issues.push(locator.issue([...at, 'price', 'per_image'], 'per_image prices an image model: add kind: image, or remove per_image'));
    }
    if (locator.has([...at, 'image_output_tokens'])) issues.push(locator.issue([...at, 'image_output_tokens'], 'image_output_tokens is for an image model: add kind: image, or remove it'));
    return issues;
  }
  model.routes.forEach((route, index) => {
    const provider = providers[route.provider];
    if (provider === undefined || wireOf(provider).nativeEndpoints.includes('images')) return;
    issues.push(locator.issue([...at, 'routes', index, 'provider'], `an image model is served on /v1/images/generations by openai-protocol providers only; "${route.provider}" speaks ${wireOf(provider).displayName}`));
  });
  const price = model.price;
  if (price !== undefined && Object.keys(price.per_image).length === 0 && price.image_output === 0) {
    issues.push(locator.issue([...at, 'price'], 'an image model\'s price needs image_output (per 1M image tokens, with input and image_input) or per_image (per image by "size/quality")'));
  }
  return issues;
}

/** Each priced beta needs something the price has: long-context rates, a tier it defines, or nothing. */
function checkBetas(price: ModelPrice, at: readonly (string | number)[], locator: YamlLocator): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const [beta, need] of Object.entries(price.betas)) {
    if ((BETA_NEEDS as readonly string[]).includes(need) || Object.hasOwn(price.tiers, need)) continue;
    const tiers = Object.keys(price.tiers).join(', ') || 'none';
    issues.push(locator.issue([...at, beta], `"${need}" must be ${BETA_NEEDS.join(', ')} or a tier of this model's price.tiers (${tiers})`));
  }
  return issues;
}

type Entries<T> = Record<string, T>;

/** The entries of `section` (providers or models) that are objects with no schema error inside them. */
function validEntries<T>(data: Record<string, unknown>, section: string, schemaErrors: readonly ErrorObject[]): Entries<T> {
  const entries = data[section];
  if (!isObject(entries)) return {};
  const clean: Entries<T> = {};
  for (const [id, value] of Object.entries(entries)) {
    // JSON Pointer escaping, as ajv writes instancePath.
    const at = `/${section}/${id.replaceAll('~', '~0').replaceAll('/', '~1')}`;
    const broken = schemaErrors.some((error) => error.instancePath === at || error.instancePath.startsWith(`${at}/`));
    if (!broken && isObject(value)) clean[id] = value as T;
  }
  return clean;
}

/**
 * `crossCheck` on a file with schema errors: over the providers and models that are valid themselves
 * (ajv has filled in their defaults), against every provider id the file defines.
 */
export function crossCheckValidParts(data: unknown, schemaErrors: readonly ErrorObject[], locator: YamlLocator): ConfigIssue[] {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return [];
  const raw = data as Record<string, unknown>;
  const providers = validEntries<ValidatedGatewayData['providers'][string]>(raw, 'providers', schemaErrors);
  const models = validEntries<ValidatedGatewayData['models'][string]>(raw, 'models', schemaErrors);
  const defined = raw.providers;
  const knownProviders = isObject(defined) ? Object.keys(defined).sort() : [];
  const derived = {
    providers: Object.fromEntries(Object.entries(providers).map(([id, provider]) => [id, deriveProvider(provider, id)])),
    models: Object.fromEntries(Object.entries(models).map(([id, model]) => [id, deriveModel(model, id)])),
  };
  return crossCheck(withCatalogLimits(derived, locator), locator, knownProviders);
}
