/**
 * Premium service a provider bills apart from its standard rates: service tiers (OpenAI priority and
 * flex, Anthropic priority and fast mode) and long context (every token of a request whose input is
 * above a threshold, at other rates). A charge is priced at the level the reply reports, not the one
 * asked for; the hold at the dearest level the request can reach (`hold-levels.ts`).
 *
 * What a charge records of its level is `ServiceLevel` (`store/store.ts`): a new kind of premium is
 * a field there, and the store, the views and the CSV do not compile until they carry it.
 */
import type { GatewayConfig, ModelConfig, ModelPrice, TierCard } from '../config/types';
import { routeCost } from '../config/route-cost';
import { inputTotal, type TokenCounts } from '../protocols/types';
import type { ServiceLevel } from '../store/store';
import { FREE, nanoPrice, type NanoPrice } from './prices';

/** One level's rates in nano-units, with its long-context rates when it has them. */
export interface LevelRates {
  readonly card: NanoPrice;
  readonly longContext: { readonly aboveInputTokens: number; readonly card: NanoPrice } | null;
}

/** A model's rates at each level it is offered at, and the anthropic-beta names it prices apart. */
export interface ModelRates {
  readonly standard: LevelRates;
  readonly tiers: ReadonlyMap<string, LevelRates>;
  /** gateway.yaml's `price.betas`: beta-name prefix → what it needs. */
  readonly betas: Readonly<Record<string, string>>;
}

/** Tier names providers report for their standard service: OpenAI `default`, Anthropic `standard`. */
const STANDARD_TIER_NAMES: ReadonlySet<string> = new Set(['default', 'standard', 'auto']);

function isStandardTier(tier: string): boolean {
  return STANDARD_TIER_NAMES.has(tier);
}

const FREE_LEVEL: LevelRates = { card: FREE, longContext: null };
export const FREE_RATES: ModelRates = { standard: FREE_LEVEL, tiers: new Map(), betas: {} };

/** A level's rates; per-image prices belong to the model, the same at every level. */
function levelRates(card: TierCard, perImage: Readonly<Record<string, number>>): LevelRates {
  const long = card.long_context;
  return {
    card: nanoPrice(card, perImage),
    longContext: long === null ? null : { aboveInputTokens: long.above_input_tokens, card: nanoPrice(long, perImage) },
  };
}

function modelRates(price: ModelPrice): ModelRates {
  return {
    standard: levelRates(price, price.per_image),
    tiers: new Map(Object.entries(price.tiers).map(([name, tier]) => [name, levelRates(tier, price.per_image)])),
    betas: price.betas,
  };
}

/** Each model's rates, computed once per config rather than per request. */
export function rateTable(config: GatewayConfig): ReadonlyMap<string, ModelRates> {
  const table = new Map<string, ModelRates>();
  for (const model of Object.values(config.models)) table.set(model.id, ratesOf(model));
  return table;
}

function ratesOf(model: ModelConfig): ModelRates {
  return model.free || model.price === undefined ? FREE_RATES : modelRates(model.price);
}

/** A route's key in a cost table: the provider and the model id it was sent. */
export function routeKey(provider: string, upstreamModel: string): string {
  return `${provider}\n${upstreamModel}`;
}

/**
 * Each model's routes' costs to the operator, by `routeKey`, computed once per config: a route whose
 * cost is unknown is left out, and its charges record none.
 */
export function costTable(config: GatewayConfig): ReadonlyMap<string, ReadonlyMap<string, ModelRates>> {
  const table = new Map<string, ReadonlyMap<string, ModelRates>>();
  for (const model of Object.values(config.models)) {
    const routes = new Map<string, ModelRates>();
    for (const route of model.routes) {
      const cost = routeCost(route, config.providers[route.provider], model);
      if (cost !== null) routes.set(routeKey(route.provider, route.upstream_model), modelRates(cost));
    }
    table.set(model.id, routes);
  }
  return table;
}

/** The rates of `tier` (null: the standard ones); undefined when the model does not price it. */
export function tierRates(rates: ModelRates, tier: string | null): LevelRates | undefined {
  return tier === null || isStandardTier(tier) ? rates.standard : rates.tiers.get(tier);
}

/** The card of a level for a request of `inputTokens` input, and whether its long-context rates apply. */
export function cardAt(level: LevelRates, inputTokens: number): { readonly card: NanoPrice; readonly longContext: boolean } {
  const long = level.longContext;
  return long !== null && inputTokens > long.aboveInputTokens ? { card: long.card, longContext: true } : { card: level.card, longContext: false };
}

export interface PricedLevel extends ServiceLevel {
  readonly card: NanoPrice;
  /** False when the reply named a tier the model has no rates for: charged at the standard rates. */
  readonly tierPriced: boolean;
}

/**
 * The rates a reply is charged at: the tier it reports (the standard rates when it names none, or one
 * the model does not price), long-context rates when its input, as the provider counts it (uncached,
 * cache writes and cache reads), is above that level's threshold.
 */
export function chargedLevel(rates: ModelRates, tokens: TokenCounts & { readonly servedTier?: string }): PricedLevel {
  const reported = tokens.servedTier ?? null;
  const level = tierRates(rates, reported);
  const { card, longContext } = cardAt(level ?? rates.standard, inputTotal(tokens));
  return { serviceTier: reported, longContext, card, tierPriced: level !== undefined };
}
