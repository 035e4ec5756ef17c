/**
 * Writes Responses API replies (docs/protocols.md#responses-reply, docs/protocols.md#responses-stream): the
 * `response` object and its event stream. Frames carry `event:` and a `sequence_number` from 0; no `[DONE]`:
 * the stream ends with `response.completed`, `response.incomplete` or `response.failed`, whose object is
 * built as the non-streamed one is. The object, its items and the request echo live in their own files and
 * are re-exported here.
 */
import type { GatewayError } from '../../kernel/errors';
import { sseFrame } from '../sse';
import type { Usage } from '../types';
import type { AssistantTurn, TurnStop, TurnStreamWriter, WebSource } from '../turn';
import { CodePointCount } from '../code-point-count';
import { heldSourceChars, HeldOutput } from '../held-output';
import {
  codePoints,
  functionCallItem,
  newResponsesId,
  outputText,
  REDACTED_THINKING_PREFIX,
  reasoningItem,
  reasoningItemFor,
  settleWebSearch,
  urlCitations,
  webSearchItem,
  webSearchItemFor,
  type ResponseFunctionCallItem,
  type ResponseMessageItem,
  type ResponseOutputItem,
  type ResponseReasoningItem,
  type ResponseWebSearchItem,
} from './items';
import type { ResponsesRequestEcho } from './request-echo';
import { finalStatus, nowSeconds, responseError, responseObject, type ResponseIdentity, type ResponseObject } from './response-object';

export {
  newResponsesId,
  REDACTED_THINKING_PREFIX,
  type ResponseFunctionCallItem,
  type ResponseOutputItem,
} from './items';
export { responsesRequestEcho, type ResponsesRequestEcho } from './request-echo';
export { responseError, type ResponseObject } from './response-object';

/** Options of a Responses stream. */
export interface ResponsesStreamOptions {
  readonly id?: string;
  readonly model: string;
  readonly createdAt?: number;
  readonly echo?: ResponsesRequestEcho;
  /** Called with the final response object of a stream that completed or was cut off by the limit. */
  readonly onFinished?: (response: ResponseObject) => void;
}

/**
 * Builds the complete non-streamed `response` object; adjacent text parts share one message item,
 * each thinking part becomes a reasoning item.
 */
export function buildResponse(turn: AssistantTurn, echo: ResponsesRequestEcho = {}): ResponseObject {
  const output: ResponseOutputItem[] = [];
  for (const part of turn.parts) {
    const last = output[output.length - 1];
    if (part.type === 'text') {
      if (part.text === '') continue; // as in the stream, where an empty delta opens no item
      let message = last;
      if (message?.type !== 'message') {
        message = { type: 'message', id: newResponsesId('msg'), status: 'completed', role: 'assistant', content: [outputText('')] };
        output.push(message);
      }
      const content = message.content[0];
      if (part.citations !== undefined && part.citations.length > 0) content.annotations.push(...urlCitations(codePoints(content.text), codePoints(part.text), part.citations));
      content.text += part.text;
    } else if (part.type === 'tool_call') {
      output.push(functionCallItem(part.id, part.name, part.arguments || '{}', 'completed'));
    } else if (part.type === 'web_search') {
      output.push(webSearchItemFor(part));
    } else {
      output.push(reasoningItemFor(part));
    }
  }
  const status = finalStatus(turn.stop);
  if (output.length > 0 && status === 'incomplete') output[output.length - 1].status = 'incomplete';
  const who = { id: turn.id ?? newResponsesId('resp'), createdAt: turn.created ?? nowSeconds(), model: turn.model, echo };
  return responseObject(who, status, output, turn.usage);
}

/**
 * The item being streamed and its place in `output`. A reasoning item's single summary part is
 * opened by the first text fragment, so a block whose thinking is omitted gets an empty summary.
 * A message item's text is measured as it grows (`length`, in code points), where citations start.
 */
type OpenItem = { readonly item: ResponseOutputItem; readonly outputIndex: number; summaryOpen?: boolean; searchId?: string; length?: CodePointCount };

/** What an item costs the held output besides its text: its ids, type, status and the JSON around them. */
const ITEM_CHARS = 256;

/**
 * Writes one Responses stream. Output items are opened on demand (text opens a message, a tool call a
 * function_call item, thinking a reasoning item) and each is closed with its full `.done` sequence
 * before the next one opens. The closing events repeat every item whole, so the writer keeps them,
 * within the bound of `held-output.ts`: each method counts what it will keep before it changes
 * anything, so a stream cut at the bound has sent exactly what its `response.failed` shows.
 */
export class ResponsesStreamWriter implements TurnStreamWriter {
  /** The response id. */
  readonly id: string;
  private readonly who: ResponseIdentity;
  private sequenceNumber = 0;
  private readonly output: ResponseOutputItem[] = [];
  private open: OpenItem | null = null;
  private readonly onFinished: ResponsesStreamOptions['onFinished'];
  /** Everything `output` and the open item keep, for the closing events. */
  private readonly held = new HeldOutput();

  constructor(options: ResponsesStreamOptions) {
    this.onFinished = options.onFinished;
    this.id = options.id ?? newResponsesId('resp');
    this.who = { id: this.id, createdAt: options.createdAt ?? nowSeconds(), model: options.model, echo: options.echo ?? {} };
  }

  /** `response.created` then `response.in_progress`, both with the empty in-progress response. */
  start(): string {
    const response = responseObject(this.who, 'in_progress', [], null);
    return this.event('response.created', { response }) + this.event('response.in_progress', { response });
  }

  /** An `output_text.delta`, opening a message item and its text part first when needed. */
  text(delta: string): string {
    if (delta === '') return '';
    const opens = this.open?.item.type !== 'message';
    this.held.hold(delta.length + (opens ? ITEM_CHARS : 0));
    const opening = opens ? this.messageStart() : '';
    const { item, outputIndex, length } = this.open as { item: ResponseMessageItem; outputIndex: number; length: CodePointCount };
    item.content[0].text += delta;
    length.add(delta);
    const where = { item_id: item.id, output_index: outputIndex, content_index: 0 };
    return opening + this.event('response.output_text.delta', { ...where, delta, logprobs: [] });
  }

  /** Opens a function_call item with `arguments: ""`. */
  toolCallStart(id: string, name: string): string {
    this.held.hold(ITEM_CHARS + id.length + name.length);
    const frames = this.itemDone('completed');
    const item = functionCallItem(id, name, '', 'in_progress');
    this.open = { item, outputIndex: this.output.length };
    return frames + this.event('response.output_item.added', { output_index: this.output.length, item });
  }

  toolCallArguments(fragment: string): string {
    const open = this.open;
    if (open?.item.type !== 'function_call') throw new Error('toolCallArguments() without an open function_call item');
    if (fragment === '') return '';
    this.held.hold(fragment.length);
    return this.argumentsDelta(open.item, open.outputIndex, fragment);
  }

  toolCallEnd(): string {
    return this.open?.item.type === 'function_call' ? this.itemDone('completed') : '';
  }

  /**
   * A `reasoning_summary_text.delta`, opening a reasoning item (and its summary part) first when
   * needed. '' opens the item only, so an upstream block start can be passed on as it arrives.
   */
  thinking(delta: string): string {
    const opens = this.open?.item.type !== 'reasoning';
    this.held.hold(delta.length + (opens ? ITEM_CHARS : 0));
    const opening = opens ? this.reasoningStart() : '';
    if (delta === '') return opening;
    const open = this.open as OpenItem & { item: ResponseReasoningItem };
    const where = { item_id: open.item.id, output_index: open.outputIndex, summary_index: 0 };
    let frames = opening;
    if (open.summaryOpen !== true) {
      open.summaryOpen = true;
      open.item.summary.push({ type: 'summary_text', text: '' });
      frames += this.event('response.reasoning_summary_part.added', { ...where, part: { type: 'summary_text', text: '' } });
    }
    open.item.summary[0].text += delta;
    return frames + this.event('response.reasoning_summary_text.delta', { ...where, delta });
  }

  /**
   * Keeps the signature as the open reasoning item's `encrypted_content`, shown in its
   * `output_item.done`. A signature with no reasoning item open (thinking omitted) opens one.
   */
  thinkingSignature(signature: string): string {
    const opens = this.open?.item.type !== 'reasoning';
    this.held.hold(signature.length + (opens ? ITEM_CHARS : 0));
    const opening = opens ? this.reasoningStart() : '';
    (this.open?.item as ResponseReasoningItem).encrypted_content = signature;
    return opening;
  }

  /** A whole reasoning item with no summary, the redacted data kept in `encrypted_content`. */
  redactedThinking(data: string): string {
    this.held.hold(ITEM_CHARS + data.length);
    const frames = this.itemDone('completed');
    const outputIndex = this.output.length;
    const item = reasoningItem([], REDACTED_THINKING_PREFIX + data, 'in_progress');
    this.open = { item, outputIndex };
    return frames + this.event('response.output_item.added', { output_index: outputIndex, item }) + this.itemDone('completed');
  }

  /** Opens a web_search_call item: `in_progress`, then `searching` (the provider runs it on its side). */
  webSearchStart(id: string, query: string): string {
    this.held.hold(ITEM_CHARS + id.length + query.length);
    const frames = this.itemDone('completed');
    const outputIndex = this.output.length;
    const item = webSearchItem(query, 'in_progress');
    this.open = { item, outputIndex, searchId: id };
    const where = { output_index: outputIndex, item_id: item.id };
    return (
      frames +
      this.event('response.output_item.added', { output_index: outputIndex, item }) +
      this.event('response.web_search_call.in_progress', where) +
      this.event('response.web_search_call.searching', where)
    );
  }

  /** Closes the search's item with its sources; a failed search has no `completed` event. */
  webSearchEnd(id: string, sources: readonly WebSource[], error: string | null): string {
    const open = this.open;
    if (open?.item.type !== 'web_search_call' || open.searchId !== id) return '';
    this.held.hold(sources.reduce((chars, source) => chars + heldSourceChars(source), 0));
    const item: ResponseWebSearchItem = open.item;
    settleWebSearch(item, sources, error);
    const completed = error === null ? this.event('response.web_search_call.completed', { output_index: open.outputIndex, item_id: item.id }) : '';
    return completed + this.itemDone('completed');
  }

  /** One `output_text.annotation.added` per source the passage just written cites. */
  citations(citedLength: number, sources: readonly WebSource[]): string {
    const open = this.open;
    if (open?.item.type !== 'message' || open.length === undefined || sources.length === 0) return '';
    this.held.hold(sources.reduce((chars, source) => chars + heldSourceChars(source), 0));
    const content = open.item.content[0];
    const annotations = urlCitations(open.length.total - citedLength, citedLength, sources);
    let frames = '';
    for (const annotation of annotations) {
      const where = { item_id: open.item.id, output_index: open.outputIndex, content_index: 0, annotation_index: content.annotations.length };
      content.annotations.push(annotation);
      frames += this.event('response.output_text.annotation.added', { ...where, annotation });
    }
    return frames;
  }

  /** Closes the open item, whatever its kind; '' when none is open. */
  blockEnd(): string {
    return this.itemDone('completed');
  }

  /** Closes the open item, then `response.completed`, or `response.incomplete` after max tokens. */
  finish(stop: TurnStop, usage: Usage): string {
    const status = finalStatus(stop);
    const frames = this.itemDone(status);
    // As in the non-streamed object: the item the limit cut off is the incomplete one.
    if (status === 'incomplete' && this.output.length > 0) this.output[this.output.length - 1].status = 'incomplete';
    const response = responseObject(this.who, status, this.output, usage);
    this.onFinished?.(response);
    return frames + this.event(status === 'completed' ? 'response.completed' : 'response.incomplete', { response });
  }

  /**
   * `response.failed` with the error and the items so far. An item cut off mid-way joins the output
   * as `incomplete` without its `.done` events: its text or arguments never finished, and the
   * snapshot the SDK builds from `output_item.added` already holds it.
   */
  fail(error: GatewayError): string {
    const open = this.open;
    this.open = null;
    if (open !== null) {
      open.item.status = 'incomplete';
      this.output.push(open.item);
    }
    const response = responseObject(this.who, 'failed', this.output, null, responseError(error));
    return this.event('response.failed', { response });
  }

  /** Closes the open item and opens a reasoning item with an empty summary. */
  private reasoningStart(): string {
    const closing = this.itemDone('completed');
    const outputIndex = this.output.length;
    const item = reasoningItem([], null, 'in_progress');
    this.open = { item, outputIndex };
    return closing + this.event('response.output_item.added', { output_index: outputIndex, item });
  }

  /** Closes the open item and opens a message item with one empty `output_text` part. */
  private messageStart(): string {
    const closing = this.itemDone('completed');
    const outputIndex = this.output.length;
    const item: ResponseMessageItem = { type: 'message', id: newResponsesId('msg'), status: 'in_progress', role: 'assistant', content: [] };
    const added = this.event('response.output_item.added', { output_index: outputIndex, item });
    const part = this.event('response.content_part.added', { item_id: item.id, output_index: outputIndex, content_index: 0, part: outputText('') });
    item.content.push(outputText(''));
    this.open = { item, outputIndex, length: new CodePointCount() };
    return closing + added + part;
  }

  /** The `.done` events of the open item, which then joins the output. */
  private itemDone(status: 'completed' | 'incomplete'): string {
    const open = this.open;
    if (open === null) return '';
    this.open = null;
    const { item, outputIndex } = open;
    let frames = '';
    if (item.type === 'message') {
      const where = { item_id: item.id, output_index: outputIndex, content_index: 0 };
      const text = item.content[0].text;
      frames += this.event('response.output_text.done', { ...where, text, logprobs: [] });
      frames += this.event('response.content_part.done', { ...where, part: { ...outputText(text), annotations: item.content[0].annotations } });
    } else if (item.type === 'function_call') {
      // A call with no argument fragments still needs valid JSON arguments (docs/protocols.md#fact-9).
      if (item.arguments === '') frames += this.argumentsDelta(item, outputIndex, '{}');
      const done = { item_id: item.id, output_index: outputIndex, name: item.name, arguments: item.arguments };
      frames += this.event('response.function_call_arguments.done', done);
    } else if (item.type === 'reasoning' && open.summaryOpen === true) {
      const where = { item_id: item.id, output_index: outputIndex, summary_index: 0 };
      const text = item.summary[0].text;
      frames += this.event('response.reasoning_summary_text.done', { ...where, text });
      frames += this.event('response.reasoning_summary_part.done', { ...where, part: { type: 'summary_text', text } });
    }
    // A search's outcome is already written on its item (webSearchEnd); one cut off before it keeps `status`.
    if (item.type !== 'web_search_call' || item.status === 'in_progress') item.status = status;
    this.output.push(item);
    return frames + this.event('response.output_item.done', { output_index: outputIndex, item });
  }

  private argumentsDelta(item: ResponseFunctionCallItem, outputIndex: number, fragment: string): string {
    item.arguments += fragment;
    return this.event('response.function_call_arguments.delta', { item_id: item.id, output_index: outputIndex, delta: fragment });
  }

  private event(type: string, payload: object): string {
    return sseFrame(type, JSON.stringify({ type, sequence_number: this.sequenceNumber++, ...payload }));
  }
}
