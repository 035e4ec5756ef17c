/** Helpers for reading token counts out of vendor JSON without trusting its types. */
import type { Usage } from './types';

/** A non-negative safe integer from an untrusted field, else 0 (a negative count must never credit anyone). */
export function count(value: unknown): number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : 0;
}

/** The object at `value[key]`, or an empty one. */
export function field(value: unknown, key: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object') return {};
  const inner = (value as Record<string, unknown>)[key];
  return inner !== null && typeof inner === 'object' ? (inner as Record<string, unknown>) : {};
}

/** Parses JSON, or returns null for anything unparseable. */
export function tryParse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/**
 * Neutral counts from OpenAI-style usage, where cache reads (`cached_tokens`) and writes
 * (`cache_write_tokens`) are counted inside the input total: they are taken out of the input count so
 * each token is billed exactly once.
 */
export function splitCachedInput(totalInput: unknown, details: Record<string, unknown>, output: unknown): Omit<Usage, 'source'> {
  const input = count(totalInput);
  const cacheRead = Math.min(count(details.cached_tokens), input);
  const cacheWrite = Math.min(count(details.cache_write_tokens), input - cacheRead);
  return {
    inputTokens: input - cacheRead - cacheWrite,
    cacheReadTokens: cacheRead,
    cacheWriteTokens: cacheWrite,
    outputTokens: count(output),
  };
}
