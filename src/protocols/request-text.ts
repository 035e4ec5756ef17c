/**
 * The text of a request's prompt, for counting input tokens when the upstream reported none. Every
 * string in the conversation counts (messages, system, instructions, tool definitions) except image
 * and file data, which providers bill by size rather than by text.
 */
import type { Json } from '../json';

/** Keys whose values are media payloads or protocol bookkeeping, not prompt text. */
const NOT_TEXT = new Set(['data', 'image_url', 'url', 'file_data', 'source', 'role', 'type', 'id', 'tool_call_id', 'tool_use_id', 'call_id', 'cache_control', 'signature', 'encrypted_content']);
/** Top-level fields that hold the prompt. */
const PROMPT_FIELDS = ['system', 'instructions', 'messages', 'input', 'tools', 'prompt'];

function collect(value: unknown, out: string[]): void {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const item of value) collect(item, out);
  else if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value as Json)) {
      if (!NOT_TEXT.has(key)) collect(inner, out);
    }
  }
}

/** The prompt text of a parsed request body, in any of the three protocols or an Images request. */
export function requestText(body: Readonly<Json>): string {
  const out: string[] = [];
  for (const field of PROMPT_FIELDS) collect(body[field], out);
  return out.join('\n');
}
