/** Helpers for reading token counts out of vendor JSON without trusting its types. */
import { object, type Json } from '../json';
import type { UsageCounts } from './types';

/**
 * The largest count accepted from a provider for one token kind of one request. No context window
 * comes near it; above it the report is treated as unreadable (and billing counts for itself) rather
 * than trusted into the ledger.
 */
const MAX_REPORTED_TOKENS = 100_000_000;

/** A usage report with a count that is not a plausible token count: a string, a fraction, a negative. */
class UnreadableUsage extends Error {}

/**
 * A reported count: absent or null is 0, a non-negative safe integer up to the bound is itself, and
 * anything else makes the whole report unreadable (`readUsage`), never 0: a negative count must never
 * credit anyone, and a string must not make an answer free.
 */
export function count(value: unknown): number {
  if (value === undefined || value === null) return 0;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= MAX_REPORTED_TOKENS) return value;
  throw new UnreadableUsage();
}

/** Runs a reader built on `count`; null when the report it reads is unreadable. */
export function readUsage<T>(read: () => T): T | null {
  try {
    return read();
  } catch (error) {
    if (error instanceof UnreadableUsage) return null;
    throw error;
  }
}

/** The object at `value[key]`, or an empty one. */
export function field(value: unknown, key: string): Json {
  return object(object(value)[key]);
}

/**
 * Neutral counts from OpenAI-style usage, where cache reads (`cached_tokens`) and writes
 * (`cache_write_tokens`) are counted inside the input total: they are taken out of the input count so
 * each token is billed exactly once. Throws (for `readUsage`) on an unreadable count.
 */
export function splitCachedInput(totalInput: unknown, details: Record<string, unknown>, output: unknown): UsageCounts {
  const input = count(totalInput);
  const cacheRead = Math.min(count(details.cached_tokens), input);
  const cacheWrite = Math.min(count(details.cache_write_tokens), input - cacheRead);
  // A literal of every kind, not a spread of NO_TOKENS with kinds overwritten: V8 takes a slow path
  // for the spread followed by the overwrites, once per reply (docs/benchmarks.md, the CPU cuts).
  return {
    inputTokens: input - cacheRead - cacheWrite,
    cacheWriteTokens: cacheWrite,
    cacheWrite1hTokens: 0,
    cacheReadTokens: cacheRead,
    outputTokens: count(output),
    imageInputTokens: 0,
    imageOutputTokens: 0,
    toolCalls: {},
  };
}

/** The counts with the tier an OpenAI reply's `service_tier` names, when it names one. */
export function withServedTier(counts: UsageCounts, serviceTier: unknown): UsageCounts {
  // Every OpenAI reply names one. Object.assign, not a spread followed by `servedTier`: V8 copies that on a
  // slow path, ten times dearer than this copy (docs/benchmarks.md, the CPU cuts).
  return typeof serviceTier === 'string' ? Object.assign({}, counts, { servedTier: serviceTier }) : counts;
}
