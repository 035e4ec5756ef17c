/**
 * Rules that span fields, which JSON Schema cannot say readably: routes must name defined
 * providers, models must be priced or free, providers need an address unless they are the demo.
 */
import type { ErrorObject } from 'ajv';
import type { ConfigIssue } from './config-error';
import { deriveModel, deriveProvider, type ValidatedGatewayData } from './derive';
import type { YamlLocator } from './locate';
import type { GatewayConfig, ModelConfig, ProviderConfig } from './types';

const ECHO_TAKES_NEITHER = 'echo answers locally and takes neither base_url nor api_key: remove this field';

/**
 * Every cross-field issue among `config`'s providers and models, positioned through `locator`.
 * `knownProviders` defaults to the providers given; with a partly invalid file it is every provider
 * id the file defines, so a route to a provider with a schema error is not also called unknown.
 */
export function crossCheck(
  config: Pick<GatewayConfig, 'providers' | 'models'>,
  locator: YamlLocator,
  knownProviders: readonly string[] = Object.keys(config.providers).sort(),
): ConfigIssue[] {
  return [
    ...Object.values(config.providers).flatMap((provider) => checkProvider(provider, locator)),
    ...Object.values(config.models).flatMap((model) => checkModel(model, knownProviders, locator)),
  ];
}

function checkProvider(provider: ProviderConfig, locator: YamlLocator): ConfigIssue[] {
  const at = ['providers', provider.id];
  if (provider.protocol === 'echo') {
    // Judged by what the operator wrote: api_key's default "" is indistinguishable from an explicit "".
    return ['base_url', 'api_key']
      .filter((field) => locator.has([...at, field]))
      .map((field) => locator.issue([...at, field], ECHO_TAKES_NEITHER));
  }
  if (!locator.has([...at, 'base_url'])) {
    return [locator.issue(at, 'missing required field "base_url" (only echo providers go without one)')];
  }
  const problem = baseUrlProblem(provider.base_url);
  return problem ? [locator.issue([...at, 'base_url'], problem)] : [];
}

/** Why a base_url is unusable, or undefined when it is fine. */
export function baseUrlProblem(baseUrl: string): string | undefined {
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

function checkModel(model: ModelConfig, knownProviders: readonly string[], locator: YamlLocator): ConfigIssue[] {
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
  return issues;
}

type Entries<T> = Record<string, T>;

/** The entries of `section` (providers or models) that are objects with no schema error inside them. */
function validEntries<T>(data: Record<string, unknown>, section: string, schemaErrors: readonly ErrorObject[]): Entries<T> {
  const entries = data[section];
  if (typeof entries !== 'object' || entries === null || Array.isArray(entries)) return {};
  const clean: Entries<T> = {};
  for (const [id, value] of Object.entries(entries)) {
    // JSON Pointer escaping, as ajv writes instancePath.
    const at = `/${section}/${id.replaceAll('~', '~0').replaceAll('/', '~1')}`;
    const broken = schemaErrors.some((error) => error.instancePath === at || error.instancePath.startsWith(`${at}/`));
    if (!broken && typeof value === 'object' && value !== null && !Array.isArray(value)) clean[id] = value as T;
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
  const knownProviders = typeof defined === 'object' && defined !== null && !Array.isArray(defined) ? Object.keys(defined).sort() : [];
  const derived = {
    providers: Object.fromEntries(Object.entries(providers).map(([id, provider]) => [id, deriveProvider(provider, id)])),
    models: Object.fromEntries(Object.entries(models).map(([id, model]) => [id, deriveModel(model, id)])),
  };
  return crossCheck(derived, locator, knownProviders);
}
