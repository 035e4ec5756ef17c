/**
 * Prices in nano-units per million tokens, and the cost of a request. The rounding rule, stated once:
 * each token kind is multiplied by its price, the products are summed, and the sum is divided by one
 * million once per request, rounding half up. A request never pays a rounding per token kind.
 */
import type { GatewayConfig, ModelConfig, ModelPrice } from '../config/types';
import { divideHalfUp, unitsToNano } from './money';

/** One model's prices per 1M tokens, in nano-units. */
export interface NanoPrice {
  readonly input: bigint;
  readonly cacheWrite: bigint;
  readonly cacheRead: bigint;
  readonly output: bigint;
}

/** Token counts, each token counted once: `inputTokens` excludes the cache reads and writes. */
export interface TokenCounts {
  readonly inputTokens: number;
  readonly cacheWriteTokens: number;
  readonly cacheReadTokens: number;
  readonly outputTokens: number;
}

const TOKENS_PER_PRICE_UNIT = 1_000_000n;

export const FREE: NanoPrice = { input: 0n, cacheWrite: 0n, cacheRead: 0n, output: 0n };

export function nanoPrice(price: ModelPrice): NanoPrice {
  return {
    input: unitsToNano(price.input),
    cacheWrite: unitsToNano(price.cache_write),
    cacheRead: unitsToNano(price.cache_hit),
    output: unitsToNano(price.output),
  };
}

/** The price table of a config, computed once per config rather than per request. */
export function priceTable(config: GatewayConfig): ReadonlyMap<string, NanoPrice> {
  const table = new Map<string, NanoPrice>();
  for (const model of Object.values(config.models)) table.set(model.id, priceOf(model));
  return table;
}

function priceOf(model: ModelConfig): NanoPrice {
  return model.free || model.price === undefined ? FREE : nanoPrice(model.price);
}

/** The cost of `tokens` at `price`, in nano-units, rounded once, half up. */
export function costOf(tokens: TokenCounts, price: NanoPrice): bigint {
  const sum =
    BigInt(tokens.inputTokens) * price.input +
    BigInt(tokens.cacheWriteTokens) * price.cacheWrite +
    BigInt(tokens.cacheReadTokens) * price.cacheRead +
    BigInt(tokens.outputTokens) * price.output;
  return divideHalfUp(sum, TOKENS_PER_PRICE_UNIT);
}

export function isFree(price: NanoPrice): boolean {
  return price.input === 0n && price.cacheWrite === 0n && price.cacheRead === 0n && price.output === 0n;
}
