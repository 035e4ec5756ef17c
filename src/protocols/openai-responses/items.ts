/**
 * The items of a Responses `output` (docs/protocols.md#responses-reply): assistant messages, function calls and
 * reasoning items, with the ids and builders the object and the stream share.
 */
import { randomHex } from '../../random-hex';
import type { ThinkingPart, WebSearchPart, WebSource } from '../turn';
import { splitNamespace } from './namespaced-name';

/** Status of one output item, and of a response that did not fail. */
export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete';

/**
 * A passage of the text that cites a web page: `start_index` and `end_index` count Unicode code points
 * of the part's text (end exclusive), as Python's string indexes do.
 */
export interface ResponseUrlCitation {
  type: 'url_citation';
  url: string;
  title: string;
  start_index: number;
  end_index: number;
}

/** An `output_text` content part. */
export type ResponseOutputText = { type: 'output_text'; text: string; annotations: ResponseUrlCitation[]; logprobs: [] };

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

/** One search as `web_search_call.action`; `sources` lists the pages it found. */
interface ResponseWebSearchAction {
  type: 'search';
  query: string;
  sources?: Array<{ type: 'url'; url: string }>;
}

/** A web search the model ran while answering; `failed` when the search ended in an error. */
export interface ResponseWebSearchItem {
  type: 'web_search_call';
  id: string;
  status: ResponseStatus | 'failed';
  action: ResponseWebSearchAction;
}

/** An item of `output`. */
export type ResponseOutputItem = ResponseMessageItem | ResponseFunctionCallItem | ResponseReasoningItem | ResponseWebSearchItem;

/**
 * Marks the `encrypted_content` of a redacted thinking block, so a later request can tell it from a
 * signature and send it back as `redacted_thinking` rather than `thinking`.
 */
export const REDACTED_THINKING_PREFIX = 'redacted:';

/** A fresh id with an OpenAI prefix: `resp`, `msg`, `fc`, `rs` (reasoning) or `ws` (web search). */
export function newResponsesId(prefix: 'resp' | 'msg' | 'fc' | 'rs' | 'ws'): string {
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

/** A web search item, in progress until its outcome is known. */
export function webSearchItem(query: string, status: ResponseWebSearchItem['status']): ResponseWebSearchItem {
  return { type: 'web_search_call', id: newResponsesId('ws'), status, action: { type: 'search', query } };
}

/** Writes a search's outcome on its item: the pages found, or `failed`. */
export function settleWebSearch(item: ResponseWebSearchItem, sources: readonly WebSource[], error: string | null): void {
  item.status = error === null ? 'completed' : 'failed';
  if (sources.length > 0) item.action.sources = sources.map((source) => ({ type: 'url', url: source.url }));
}

/** The finished item of a search part. */
export function webSearchItemFor(part: WebSearchPart): ResponseWebSearchItem {
  const item = webSearchItem(part.query, 'in_progress');
  settleWebSearch(item, part.sources, part.error);
  return item;
}

/** The annotations for `cited`, the last passage of a text part that ends `before.length + cited.length` in. */
export function urlCitations(start: number, length: number, sources: readonly WebSource[]): ResponseUrlCitation[] {
  const end = start + length;
  return sources.map((source) => ({ type: 'url_citation', url: source.url, title: source.title ?? '', start_index: start, end_index: end }));
}

/** Unicode code points in `text`: its UTF-16 length less one per surrogate pair. */
export function codePoints(text: string): number {
  let count = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        count--;
        i++;
      }
    }
  }
  return count;
}
