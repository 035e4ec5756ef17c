/**
 * Prices in nano-units, and the cost of a request. The rounding rule, stated once: each token kind is
 * multiplied by its price per million, each server-tool call by its price per thousand (scaled to the
 * same million), the products are summed, and the sum is divided by one million once per request,
 * rounding half up. A request never pays a rounding per token kind.
 */
import type { RateCard } from '../config/types';
import { IMAGE_TOKEN_KINDS, INPUT_TOKEN_KINDS, TOKEN_KINDS, type TokenCounts, type TokenKind, type ToolCalls } from '../protocols/types';
import type { ChargePrices } from '../store/store';
import { divideHalfUp, unitsToNano } from './money';

/** The gateway.yaml price each token kind is billed at: a new kind does not compile until it has one. */
const PRICE_FIELDS = {
  inputTokens: 'input',
  cacheWriteTokens: 'cache_write',
  cacheWrite1hTokens: 'cache_write_1h',
  cacheReadTokens: 'cache_hit',
  outputTokens: 'output',
  imageInputTokens: 'image_input',
  imageOutputTokens: 'image_output',
} as const satisfies Record<TokenKind, Exclude<keyof RateCard, 'tool_calls'>>;

/**
 * One model's prices in nano-units: per 1M tokens of each kind, per 1,000 calls of each billed tool,
 * and per image by `size/quality` (a per-image model; empty otherwise, in gateway.yaml's order).
 */
export interface NanoPrice {
  readonly tokens: Readonly<Record<TokenKind, bigint>>;
  readonly toolCalls: Readonly<Record<string, bigint>>;
  readonly perImage: Readonly<Record<string, bigint>>;
}

/** What a reply delivered that is priced per image: how many, at which `size/quality` key (null: none priced). */
export interface ImagesCharged {
  readonly images?: number;
  readonly imageKey?: string | null;
}

export const TOKENS_PER_PRICE_UNIT = 1_000_000n;
/** Tool prices are per 1,000 calls; this scales a call to the per-million sum. */
export const CALLS_SCALE = TOKENS_PER_PRICE_UNIT / 1_000n;

function tokenPrices(price: (kind: TokenKind) => bigint): Record<TokenKind, bigint> {
  return Object.fromEntries(TOKEN_KINDS.map((kind) => [kind, price(kind)])) as Record<TokenKind, bigint>;
}

export const FREE: NanoPrice = { tokens: tokenPrices(() => 0n), toolCalls: {}, perImage: {} };

export function nanoPrice(price: RateCard, perImage: Readonly<Record<string, number>> = {}): NanoPrice {
  return {
    perImage: Object.fromEntries(Object.entries(perImage).map(([key, units]) => [key, unitsToNano(units)])),
    tokens: tokenPrices((kind) => unitsToNano(price[PRICE_FIELDS[kind]])),
    toolCalls: Object.fromEntries(Object.entries(price.tool_calls).map(([tool, perThousand]) => [tool, unitsToNano(perThousand)])),
  };
}

/**
 * The cost of `usage` at `price`, in nano-units, rounded once, half up. Unpriced tool calls cost 0;
 * images are priced only when the usage names the per-image key they are charged at.
 */
export function costOf(usage: TokenCounts & { readonly toolCalls?: ToolCalls } & ImagesCharged, price: NanoPrice): bigint {
  let sum = 0n;
  for (const kind of TOKEN_KINDS) sum += BigInt(usage[kind]) * price.tokens[kind];
  for (const [tool, calls] of Object.entries(usage.toolCalls ?? {})) sum += BigInt(calls) * (price.toolCalls[tool] ?? 0n) * CALLS_SCALE;
  if (usage.imageKey != null) sum += BigInt(usage.images ?? 0) * (price.perImage[usage.imageKey] ?? 0n) * TOKENS_PER_PRICE_UNIT;
  return divideHalfUp(sum, TOKENS_PER_PRICE_UNIT);
}

/**
 * The dearest price per 1M input-side tokens of a text prompt: it may turn out to be all cache writes.
 * Image input is not a text prompt's: image models and the image tool are held apart (`hold-amount.ts`).
 */
export function dearestInputPrice(price: NanoPrice): bigint {
  let dearest = 0n;
  for (const kind of INPUT_TOKEN_KINDS) if (!IMAGE_TOKEN_KINDS.includes(kind) && price.tokens[kind] > dearest) dearest = price.tokens[kind];
  return dearest;
}

export function isFree(price: NanoPrice): boolean {
  return (
    TOKEN_KINDS.every((kind) => price.tokens[kind] === 0n) &&
    Object.values(price.toolCalls).every((p) => p === 0n) &&
    Object.values(price.perImage).every((p) => p === 0n)
  );
}

/** The prices a charge records, so it can be recomputed from its row alone after the table changed. */
export function snapshotOf(price: NanoPrice): ChargePrices {
  return {
    tokens: Object.fromEntries(TOKEN_KINDS.map((kind) => [kind, String(price.tokens[kind])])) as Record<TokenKind, string>,
    tool_calls: Object.fromEntries(Object.entries(price.toolCalls).map(([tool, nano]) => [tool, String(nano)])),
  };
}

export function priceOfSnapshot(snapshot: ChargePrices): NanoPrice {
  return {
    tokens: tokenPrices((kind) => BigInt(snapshot.tokens[kind] ?? '0')),
    toolCalls: Object.fromEntries(Object.entries(snapshot.tool_calls).map(([tool, nano]) => [tool, BigInt(nano)])),
    perImage: snapshot.per_image === undefined ? {} : { [snapshot.per_image.key]: BigInt(snapshot.per_image.nano) },
  };
}
