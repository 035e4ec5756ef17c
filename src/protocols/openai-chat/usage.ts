/** Usage of a Chat Completions exchange: the `usage` object of the reply or of the last stream chunk. */
import { object, tryParse } from '../../json';
import { field, readUsage, splitCachedInput, withServedTier } from '../usage-json';
import type { UsageCounts } from '../types';

/**
 * Maps chat `usage` to neutral counts, or null when a count is unreadable. OpenAI counts cached tokens inside
 * `prompt_tokens` (docs/protocols.md#chat-reply), so they are taken out of the input count to bill each token
 * once; reasoning tokens are inside `completion_tokens`.
 */
export function chatUsage(usage: Record<string, unknown>, serviceTier?: unknown): UsageCounts | null {
  const counts = readUsage(() => splitCachedInput(usage.prompt_tokens, field(usage, 'prompt_tokens_details'), usage.completion_tokens));
  return counts === null ? null : withServedTier(counts, serviceTier);
}

/** The usage of a non-streamed chat reply body, if it has a readable one. */
function chatUsageFromBody(text: string): UsageCounts | null {
  const body = tryParse(text);
  const usage = field(body, 'usage');
  return Object.keys(usage).length === 0 ? null : chatUsage(usage, object(body).service_tier);
}

/**
 * The usage carried by one stream chunk, if any. Only chunks that mention a usage object are parsed:
 * every other chunk (`"usage":null` or none) costs a substring search, not a JSON.parse.
 */
export function chatUsageFromChunk(data: string): UsageCounts | null {
  if (!data.includes('"usage":{') && !data.includes('"usage": {')) return null;
  return chatUsageFromBody(data);
}
