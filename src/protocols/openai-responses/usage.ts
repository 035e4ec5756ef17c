/**
 * Usage of a Responses exchange: `response.usage`, on the object or on the terminal stream event,
 * plus the hosted-tool calls OpenAI bills per call, counted from the response's output items
 * (`web_search_call` → `web_search`).
 */
import { tryParse } from '../../json';
import { field, readUsage, splitCachedInput, withServedTier } from '../usage-json';
import type { ToolCalls, UsageCounts } from '../types';
import { imageTokenCounts } from '../openai-images/usage';

/** Events that carry the final response object, usage included. */
const TERMINAL_EVENTS = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/** Output item types of hosted tools, by the tool name prices use. */
const BILLED_TOOL_ITEMS: Readonly<Record<string, string>> = {
  web_search_call: 'web_search',
  file_search_call: 'file_search',
  code_interpreter_call: 'code_interpreter',
  image_generation_call: 'image_generation',
};

/**
 * Maps a Responses object's `usage` and output to neutral counts; null when a count is unreadable. The
 * `image_generation` tool's tokens are not in `usage`: they come apart, in `tool_usage.image_gen`, and
 * are added as image tokens (its prompt's text tokens as input), at the model's image prices.
 */
export function responsesUsage(response: Record<string, unknown>): UsageCounts | null {
  const usage = field(response, 'usage');
  if (Object.keys(usage).length === 0) return null;
  const counts = readUsage(() => {
    const text = splitCachedInput(usage.input_tokens, field(usage, 'input_tokens_details'), usage.output_tokens);
    const imageGen = field(field(response, 'tool_usage'), 'image_gen');
    if (Object.keys(imageGen).length === 0) return text;
    const image = imageTokenCounts(imageGen);
    return {
      ...text,
      inputTokens: text.inputTokens + image.inputTokens,
      imageInputTokens: image.imageInputTokens,
      outputTokens: text.outputTokens + image.outputTokens,
      imageOutputTokens: image.imageOutputTokens,
    };
  });
  return counts === null ? null : withServedTier({ ...counts, toolCalls: hostedToolCalls(response.output) }, response.service_tier);
}

function hostedToolCalls(output: unknown): ToolCalls {
  const calls: Record<string, number> = {};
  if (!Array.isArray(output)) return calls;
  for (const item of output as unknown[]) {
    const type = item !== null && typeof item === 'object' ? (item as Record<string, unknown>).type : undefined;
    const tool = typeof type === 'string' ? BILLED_TOOL_ITEMS[type] : undefined;
    if (tool !== undefined) calls[tool] = (calls[tool] ?? 0) + 1;
  }
  return calls;
}

/** The final response object of a terminal stream event, or null for any other event. */
function terminalResponse(event: string | null, data: string): Record<string, unknown> | null {
  if (event !== null && !TERMINAL_EVENTS.has(event)) return null;
  if (event === null && !data.includes('"usage"')) return null;
  const response = field(tryParse(data), 'response');
  return Object.keys(response).length === 0 ? null : response;
}

/** The usage of a stream event, read only from the terminal events. */
export function responsesUsageFromEvent(event: string | null, data: string): UsageCounts | null {
  const response = terminalResponse(event, data);
  return response === null ? null : responsesUsage(response);
}

/** The response id a stream event names (`response.created` and the terminal events carry it). */
export function responseIdFromEvent(event: string | null, data: string): string | null {
  if (event !== 'response.created' && event !== 'response.completed' && event !== 'response.incomplete') return null;
  const id = field(tryParse(data), 'response').id;
  return typeof id === 'string' ? id : null;
}
