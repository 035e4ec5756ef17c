/** Usage of a Chat Completions exchange: the `usage` object of the reply or of the last stream chunk. */
import { tryParse } from '../../json';
import { field, readUsage, splitCachedInput } from '../usage-json';
import type { UsageCounts } from '../types';

/**
 * Maps chat `usage` to neutral counts, or null when a count is unreadable. OpenAI counts cached tokens inside
 * `prompt_tokens` (docs/protocols.md#chat-reply), so they are taken out of the input count to bill each token
 * once; reasoning tokens are inside `completion_tokens`.
 */
export function chatUsage(usage: Record<string, unknown>): UsageCounts | null {
  return readUsage(() => splitCachedInput(usage.prompt_tokens, field(usage, 'prompt_tokens_details'), usage.completion_tokens));
}

/** The usage of a non-streamed chat reply body, if it has a readable one. */
function chatUsageFromBody(text: string): UsageCounts | null {
  const usage = field(tryParse(text), 'usage');
  return Object.keys(usage).length === 0 ? null : chatUsage(usage);
}

/**
 * The usage carried by one stream chunk, if any. Only chunks that mention a usage object are parsed:
 * every other chunk (`"usage":null` or none) costs a substring search, not a JSON.parse.
 */
export function chatUsageFromChunk(data: string): UsageCounts | null {
  if (!data.includes('"usage":{') && !data.includes('"usage": {')) return null;
  return chatUsageFromBody(data);
}
