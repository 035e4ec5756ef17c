/** Usage of a Responses exchange: `response.usage`, on the object or on the terminal stream event. */
import { field, splitCachedInput, tryParse } from '../usage-json';
import type { Usage } from '../types';

/** Events that carry the final response object, usage included. */
const TERMINAL_EVENTS = new Set(['response.completed', 'response.incomplete', 'response.failed']);

/** Maps Responses `usage` to neutral counts; cached tokens are a subset of `input_tokens`. */
export function responsesUsage(usage: Record<string, unknown>): Omit<Usage, 'source'> {
  return splitCachedInput(usage.input_tokens, field(usage, 'input_tokens_details'), usage.output_tokens);
}


/** The usage of a stream event, read only from the terminal events. */
export function responsesUsageFromEvent(event: string | null, data: string): Omit<Usage, 'source'> | null {
  if (event !== null && !TERMINAL_EVENTS.has(event)) return null;
  if (event === null && !data.includes('"usage"')) return null;
  const usage = field(field(tryParse(data), 'response'), 'usage');
  return Object.keys(usage).length === 0 ? null : responsesUsage(usage);
}
