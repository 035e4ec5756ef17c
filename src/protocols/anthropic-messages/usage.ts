/**
 * Usage of a Messages exchange. Anthropic's `input_tokens` already excludes cache reads and writes
 * (PROTOCOLS.md §3.4), which is the neutral form. In streams, `message_start` carries the input side
 * and `message_delta` cumulative totals that overwrite, never add (§3.5).
 */
import { count, field, tryParse } from '../usage-json';
import type { Usage } from '../types';

type Counts = Omit<Usage, 'source'>;

/** Neutral counts from an Anthropic `usage` object; fields it lacks keep the values of `base`. */
export function messagesUsage(usage: Record<string, unknown>, base?: Counts): Counts {
  const pick = (key: string, fallback: number) => (key in usage ? count(usage[key]) : fallback);
  return {
    inputTokens: pick('input_tokens', base?.inputTokens ?? 0),
    cacheWriteTokens: pick('cache_creation_input_tokens', base?.cacheWriteTokens ?? 0),
    cacheReadTokens: pick('cache_read_input_tokens', base?.cacheReadTokens ?? 0),
    outputTokens: pick('output_tokens', base?.outputTokens ?? 0),
  };
}


/** Folds one stream event into the usage seen so far; events other than start and delta change nothing. */
export function messagesUsageFromEvent(event: string | null, data: string, sofar: Counts | null): Counts | null {
  if (event === 'message_start') {
    const usage = field(field(tryParse(data), 'message'), 'usage');
    return Object.keys(usage).length === 0 ? sofar : messagesUsage(usage, sofar ?? undefined);
  }
  if (event === 'message_delta') {
    const usage = field(tryParse(data), 'usage');
    return Object.keys(usage).length === 0 ? sofar : messagesUsage(usage, sofar ?? undefined);
  }
  return sofar;
}
