/**
 * The text a reply carried: what billing counts with a tokenizer when the upstream reported no usage
 * (or the stream broke off). Streams are read event by event (`output-count.ts`), whole replies once.
 * Tool-call arguments and reasoning count as output, as the providers bill them.
 */
import { object, tryParse, type Json } from '../json';
import type { EndpointId } from './types';

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** Output text of one chat chunk (or a whole chat.completion's message, same fields). */
function chatText(delta: Json): string {
  let out = text(delta.content) + text(delta.reasoning_content) + text(delta.refusal);
  const calls = delta.tool_calls;
  if (Array.isArray(calls)) for (const call of calls) out += text(object(object(call).function).arguments);
  return out;
}

function chatChunkText(data: Json): string {
  const choices = data.choices;
  if (!Array.isArray(choices)) return '';
  return choices.map((choice) => chatText(object(object(choice).delta))).join('');
}

function messagesEventText(data: Json): string {
  if (data.type === 'content_block_start') {
    const block = object(data.content_block);
    return text(block.text) + text(block.thinking);
  }
  if (data.type !== 'content_block_delta') return '';
  const delta = object(data.delta);
  return text(delta.text) + text(delta.partial_json) + text(delta.thinking);
}

const RESPONSES_DELTAS = new Set([
  'response.output_text.delta',
  'response.function_call_arguments.delta',
  'response.reasoning_summary_text.delta',
  'response.reasoning_text.delta',
  'response.refusal.delta',
]);

function responsesEventText(data: Json): string {
  return typeof data.type === 'string' && RESPONSES_DELTAS.has(data.type) ? text(data.delta) : '';
}

/** The output text of a whole reply that has already been parsed. */
export function replyText(endpoint: EndpointId, body: unknown): string {
  return bodyText(endpoint, object(body));
}

function bodyText(endpoint: EndpointId, body: Json): string {
  switch (endpoint) {
    case 'chat': {
      const choices = Array.isArray(body.choices) ? body.choices : [];
      return choices.map((choice) => chatText(object(object(choice).message))).join('');
    }
    case 'messages': {
      const content = Array.isArray(body.content) ? body.content : [];
      return content.map((block) => {
        const b = object(block);
        return text(b.text) + text(b.thinking) + (b.type === 'tool_use' ? JSON.stringify(b.input ?? {}) : '');
      }).join('');
    }
    case 'responses': {
      const output = Array.isArray(body.output) ? body.output : [];
      return output.map((item) => {
        const i = object(item);
        if (i.type === 'function_call') return text(i.arguments);
        const parts = Array.isArray(i.content) ? i.content : Array.isArray(i.summary) ? i.summary : [];
        return parts.map((part) => text(object(part).text)).join('');
      }).join('');
    }
    case 'count_tokens':
    case 'images':
      return '';
  }
}

/** The output text of one stream event's data in `endpoint`'s protocol ('' for events that carry none). */
export function eventText(endpoint: EndpointId, data: string): string {
  return data === '[DONE]' ? '' : eventTextOf(endpoint, tryParse(data));
}

/** The output text of one stream event whose data has already been parsed. */
export function eventTextOf(endpoint: EndpointId, data: unknown): string {
  switch (endpoint) {
    case 'chat':
      return chatChunkText(object(data));
    case 'messages':
      return messagesEventText(object(data));
    case 'responses':
      return responsesEventText(object(data));
    case 'count_tokens':
    case 'images':
      return '';
  }
}
