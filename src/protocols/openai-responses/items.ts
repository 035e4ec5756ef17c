/**
 * The items of a Responses `output` (docs/protocols.md#responses-reply): assistant messages, function calls and
 * reasoning items, with the ids and builders the object and the stream share.
 */
import { randomHex } from '../../random-hex';
import type { ThinkingPart } from '../turn';
import { splitNamespace } from './namespaced-name';

/** Status of one output item, and of a response that did not fail. */
export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete';

/** An `output_text` content part. */
export type ResponseOutputText = { type: 'output_text'; text: string; annotations: []; logprobs: [] };

/** An assistant message item of `output`. */
export interface ResponseMessageItem {
  type: 'message';
  id: string;
  status: ResponseStatus;
  role: 'assistant';
  content: ResponseOutputText[];
}

/** A function call item of `output`; `call_id` is what the client answers with. */
export interface ResponseFunctionCallItem {
  type: 'function_call';
  id: string;
  status: ResponseStatus;
  call_id: string;
  name: string;
  /** The namespace tool the function belongs to; absent for a top-level function. */
  namespace?: string;
  arguments: string;
}

/** A `summary_text` part of a reasoning item. */
export type ResponseSummaryText = { type: 'summary_text'; text: string };

/**
 * A reasoning item of `output`. Anthropic's thinking text becomes the summary; its signature (or a redacted
 * block's data) rides in `encrypted_content`, which clients send back in their next `input` so the translated
 * request can return the block verbatim, as the Messages API demands (docs/protocols.md#messages-request).
 */
export interface ResponseReasoningItem {
  type: 'reasoning';
  id: string;
  status: ResponseStatus;
  summary: ResponseSummaryText[];
  encrypted_content: string | null;
}

/** An item of `output`. */
export type ResponseOutputItem = ResponseMessageItem | ResponseFunctionCallItem | ResponseReasoningItem;

/**
 * Marks the `encrypted_content` of a redacted thinking block, so a later request can tell it from a
 * signature and send it back as `redacted_thinking` rather than `thinking`.
 */
export const REDACTED_THINKING_PREFIX = 'redacted:';

/** A fresh id with an OpenAI prefix: `resp`, `msg`, `fc` or `rs` (reasoning). */
export function newResponsesId(prefix: 'resp' | 'msg' | 'fc' | 'rs'): string {
  return `${prefix}_${randomHex(12)}`;
}

/** An `output_text` part holding `text`. */
export function outputText(text: string): ResponseOutputText {
  return { type: 'output_text', text, annotations: [], logprobs: [] };
}

/** A reasoning item with a fresh id. */
export function reasoningItem(summary: ResponseSummaryText[], encryptedContent: string | null, status: ResponseStatus): ResponseReasoningItem {
  return { type: 'reasoning', id: newResponsesId('rs'), status, summary, encrypted_content: encryptedContent };
}

/** The finished reasoning item for a thinking part; empty thinking text gives an empty summary. */
export function reasoningItemFor(part: ThinkingPart): ResponseReasoningItem {
  if (part.type === 'redacted_thinking') return reasoningItem([], REDACTED_THINKING_PREFIX + part.data, 'completed');
  const summary: ResponseSummaryText[] = part.text === '' ? [] : [{ type: 'summary_text', text: part.text }];
  return reasoningItem(summary, part.signature === '' ? null : part.signature, 'completed');
}

/** A function_call item for the client's flat tool name, split into name and namespace. */
export function functionCallItem(callId: string, flatName: string, args: string, status: ResponseStatus): ResponseFunctionCallItem {
  const { name, namespace } = splitNamespace(flatName);
  return { type: 'function_call', id: newResponsesId('fc'), status, call_id: callId, name, ...(namespace !== undefined && { namespace }), arguments: args };
}
