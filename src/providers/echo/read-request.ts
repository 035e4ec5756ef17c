/**
 * Reads what the echo provider needs out of a request body in any of the four client protocols. The
 * kernel has validated the body already, so anything of an unexpected shape is simply skipped.
 */
import { isObject, type Json } from '../../json';
import type { EndpointId } from '../../protocols/types';

/** The protocol-neutral facts of a request that the echo reply depends on. */
export interface EchoRequest {
  readonly model: string;
  readonly stream: boolean;
  /** Chat's `stream_options.include_usage`; false on other endpoints. */
  readonly includeUsage: boolean;
  /** `max_completion_tokens` / `max_tokens` / `max_output_tokens`; null when absent. */
  readonly maxTokens: number | null;
  /** The text of the last user message, text parts joined with a space. */
  readonly lastUserText: string;
  /** Every text of the prompt (system, instructions, messages, input), for counting input tokens. */
  readonly promptTexts: readonly string[];
}

function list(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

/**
 * The texts of a content value in any protocol: a string, or parts whose `text` is a string (chat
 * `text`, Messages `text`, Responses `input_text`/`output_text`); Messages tool results are entered.
 */
function contentTexts(content: unknown): string[] {
  if (typeof content === 'string') return [content];
  const texts: string[] = [];
  for (const part of list(content)) {
    if (!isObject(part)) continue;
    if (typeof part.text === 'string') texts.push(part.text);
    else if (part.type === 'tool_result') texts.push(...contentTexts(part.content));
  }
  return texts;
}

/** Texts of a message list (chat `messages`, Messages `messages`, Responses `input` items). */
function messageTexts(messages: unknown): string[] {
  const texts: string[] = [];
  for (const message of list(messages)) {
    if (!isObject(message)) continue;
    texts.push(...contentTexts(message.content));
    // A Responses tool result is an item of its own, with its text in `output`.
    if (message.type === 'function_call_output') texts.push(...contentTexts(message.output));
  }
  return texts;
}

function lastUserText(messages: unknown): string {
  const users = list(messages).filter((message) => isObject(message) && message.role === 'user');
  const last = users[users.length - 1];
  return isObject(last) ? contentTexts(last.content).join(' ') : '';
}

function tokenLimit(...candidates: unknown[]): number | null {
  const limit = candidates.find((value) => value !== undefined && value !== null);
  return typeof limit === 'number' && Number.isSafeInteger(limit) && limit >= 0 ? limit : null;
}

/** Reads a parsed request body written in the protocol of `endpoint`. */
export function readEchoRequest(endpoint: EndpointId, body: Readonly<Json>): EchoRequest {
  const model = typeof body.model === 'string' ? body.model : 'echo';
  // count_tokens has no reply, so never a stream.
  const stream = endpoint !== 'count_tokens' && body.stream === true;
  switch (endpoint) {
    case 'chat':
      return {
        model,
        stream,
        includeUsage: isObject(body.stream_options) && body.stream_options.include_usage === true,
        maxTokens: tokenLimit(body.max_completion_tokens, body.max_tokens),
        lastUserText: lastUserText(body.messages),
        promptTexts: messageTexts(body.messages),
      };
    case 'responses': {
      const input = body.input;
      const instructions = typeof body.instructions === 'string' ? [body.instructions] : [];
      return {
        model,
        stream,
        includeUsage: false,
        maxTokens: tokenLimit(body.max_output_tokens),
        lastUserText: typeof input === 'string' ? input : lastUserText(input),
        promptTexts: [...instructions, ...(typeof input === 'string' ? [input] : messageTexts(input))],
      };
    }
    case 'images':
      return {
        model,
        stream,
        includeUsage: false,
        maxTokens: null,
        lastUserText: typeof body.prompt === 'string' ? body.prompt : '',
        promptTexts: typeof body.prompt === 'string' ? [body.prompt] : [],
      };
    case 'messages':
    case 'count_tokens':
      return {
        model,
        stream,
        includeUsage: false,
        maxTokens: tokenLimit(body.max_tokens),
        lastUserText: lastUserText(body.messages),
        promptTexts: [...contentTexts(body.system), ...messageTexts(body.messages)],
      };
  }
}
