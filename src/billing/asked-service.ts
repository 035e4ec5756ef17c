/**
 * What a request asks the provider for that the provider bills above its standard rates: a service
 * tier (OpenAI `service_tier`; Anthropic `service_tier` and fast mode's `speed: "fast"`) or an
 * `anthropic-beta` that changes the price (1M context, fast mode). What the model prices passes
 * unchanged, and the hold covers the dearest level the reply may report; what it does not price is
 * refused with a 400 naming the field and the model, before the provider is called. Nothing is
 * stripped: the body and the headers pass as the client sent them, or not at all. Values compare
 * case-insensitively (`speed: "FAST"` is fast mode to a provider that reads it so); their types are the
 * request schemas' (`schemas/requests/`), so a list or an object never gets here unread.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from '../kernel/errors';
import type { EndpointId } from '../protocols/types';
import { tierRates, type ModelRates } from './service-levels';

/** What a priced beta needs from the model's price: its long-context rates, a tier's, nothing, or never. */
export const BETA_NEEDS = ['long_context', 'standard', 'refuse'] as const;

/**
 * The anthropic-beta names known to change the price, by the prefix every dated version shares, with
 * what each needs (a tier name, or one of `BETA_NEEDS`). A model's `price.betas` adds to it or
 * overrides an entry; every other beta passes as it always has (Claude Code sends several).
 */
const PRICED_BETAS: Readonly<Record<string, string>> = {
  'context-1m-': 'long_context',
  'fast-mode-': 'fast',
};

/** OpenAI `service_tier` values that ask for no premium, and the tier each premium one is reported as. */
const OPENAI_STANDARD_ASKS: ReadonlySet<string> = new Set(['auto', 'default']);
/** `fast` is served, and reported, as `priority`. */
const OPENAI_REPORTED_AS: Readonly<Record<string, string>> = { fast: 'priority' };

export interface AskedService {
  /** The tiers the reply may report (null: the standard service); the hold covers the dearest. */
  readonly tiers: readonly (string | null)[];
}

interface Context {
  readonly model: string;
  readonly rates: ModelRates;
  /** The standard service and the tiers asked for, in order; null until a tier is asked for. */
  tiers: Set<string | null> | null;
}

/** What nearly every request asks for: the standard service alone, one answer shared by all. */
const STANDARD_SERVICE: AskedService = Object.freeze({ tiers: Object.freeze([null]) });

function addTier(context: Context, tier: string): void {
  (context.tiers ??= new Set<string | null>([null])).add(tier);
}

/** Refuses what the model does not price; otherwise the tiers the reply may be served at. */
export function askedService(
  endpoint: EndpointId,
  body: Readonly<Record<string, unknown>>,
  headers: IncomingHttpHeaders,
  model: string,
  rates: ModelRates,
): AskedService {
  const context: Context = { model, rates, tiers: null };
  if (endpoint === 'chat' || endpoint === 'responses') openAiAsks(body, context);
  if (endpoint === 'messages') anthropicAsks(body, headers, context);
  return context.tiers === null ? STANDARD_SERVICE : { tiers: [...context.tiers] };
}

function openAiAsks(body: Readonly<Record<string, unknown>>, context: Context): void {
  const asked = body.service_tier;
  if (typeof asked !== 'string') return;
  const tier = asked.toLowerCase();
  if (OPENAI_STANDARD_ASKS.has(tier)) return;
  needTier('service_tier', asked, OPENAI_REPORTED_AS[tier] ?? tier, context);
}

/**
 * Anthropic's `service_tier` is `auto` by default: Priority Tier capacity where the organisation has
 * it, so a model that prices `priority` is held at it; `standard_only` never is.
 */
function anthropicAsks(body: Readonly<Record<string, unknown>>, headers: IncomingHttpHeaders, context: Context): void {
  const asked = body.service_tier;
  const tier = typeof asked === 'string' ? asked.toLowerCase() : undefined;
  if (asked === undefined || tier === 'auto') {
    if (context.rates.tiers.has('priority')) addTier(context, 'priority');
  } else if (typeof asked === 'string' && tier !== 'standard_only') {
    needTier('service_tier', asked, asked.toLowerCase(), context);
  }
  const { speed } = body;
  if (typeof speed === 'string' && speed.toLowerCase() === 'fast') needTier('speed', speed, 'fast', context);
  for (const beta of betasOf(body, headers)) {
    const need = betaNeed(beta, context.rates.betas);
    if (need === undefined || need === 'standard') continue;
    if (need === 'refuse' || (need === 'long_context' && context.rates.standard.longContext === null)) throw notOffered('anthropic-beta', beta, context.model);
    if (need !== 'long_context') needTier('anthropic-beta', beta, need, context);
  }
}

function needTier(field: string, asked: string, tier: string, context: Context): void {
  if (tierRates(context.rates, tier) === undefined) throw notOffered(field, asked, context.model);
  addTier(context, tier);
}

/** The betas of the header (comma-separated, possibly repeated) and of a body's `anthropic_beta` list. */
function betasOf(body: Readonly<Record<string, unknown>>, headers: IncomingHttpHeaders): string[] {
  const header = headers['anthropic-beta'];
  const values = header === undefined ? [] : Array.isArray(header) ? header : [header];
  const names = values.flatMap((value) => value.split(','));
  if (Array.isArray(body.anthropic_beta)) names.push(...body.anthropic_beta.filter((name): name is string => typeof name === 'string'));
  return names.map((name) => name.trim().toLowerCase()).filter((name) => name !== '');
}

/** What `beta` needs: the model's own entry with the longest matching prefix, else the built-in one. */
function betaNeed(beta: string, modelBetas: Readonly<Record<string, string>>): string | undefined {
  return longestPrefixMatch(beta, modelBetas) ?? longestPrefixMatch(beta, PRICED_BETAS);
}

function longestPrefixMatch(beta: string, table: Readonly<Record<string, string>>): string | undefined {
  let best: string | undefined;
  for (const prefix of Object.keys(table)) {
    if (beta.startsWith(prefix) && (best === undefined || prefix.length > best.length)) best = prefix;
  }
  return best === undefined ? undefined : table[best];
}

function notOffered(field: string, value: string, model: string): GatewayError {
  return new GatewayError('TOLLGATE_ERR_SERVICE_NOT_OFFERED', `${field} ${JSON.stringify(value)} is not offered for model ${model}.`, { param: field });
}
