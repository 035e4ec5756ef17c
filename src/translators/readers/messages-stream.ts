/**
 * The state machine that reads an Anthropic Messages event stream (docs/protocols.md#messages-stream) and
 * drives the client's writer, one upstream event at a time. Block indexes are the upstream's business:
 * writers number their own blocks, and chat counts tool calls apart from other blocks
 * (docs/protocols.md#fact-8).
 */
import { object, stringField, tryParse, type Json } from '../../json';
import { GatewayError } from '../../kernel/errors';
import { messagesUsage } from '../../protocols/anthropic-messages/usage';
import type { SseEvent } from '../../protocols/sse';
import type { TurnStop, TurnStreamWriter, WebSource } from '../../protocols/turn';
import { NO_TOKENS, type Usage, type UsageCounts } from '../../protocols/types';
import { upstreamStreamError } from '../errors';
import type { ToolNameMap } from '../tool-names';
import { stopFromMessages } from './messages-stop';
import type { ReplyStreamReader } from './types';
import { CodePointCount } from '../../protocols/code-point-count';
import { heldSourceChars, HeldOutput } from '../../protocols/held-output';
import { citedSource, citedSources, searchOutcome, searchQuery, WEB_SEARCH_TOOL_NAME } from './web-search';

type Counts = UsageCounts;

/**
 * The upstream block under way, where its end matters: a search's input arrives in fragments and is
 * passed on whole when the block ends; a text block's citations are passed on at its end with the
 * length of its text (its text itself went on as it came, and is not kept), and consecutive text
 * blocks continue one passage of the answer (Anthropic splits a cited answer into a block per cited
 * claim). Any other block closes at its end.
 */
type OpenBlock =
  | { readonly kind: 'search'; readonly id: string; input: string }
  | { readonly kind: 'text'; readonly length: CodePointCount; readonly sources: WebSource[] }
  | { readonly kind: 'skipped' }
  | { readonly kind: 'other' };

export class MessagesStreamReader implements ReplyStreamReader {
  ended = false;
  upstreamError: GatewayError | null = null;
  private started = false;
  private counts: Counts | null = null;
  private unreadable = false;
  private stop: TurnStop = 'end';
  private stopSequence: string | null = null;
  private stopSeen = false;
  private block: OpenBlock = { kind: 'other' };
  /** What the open block keeps until its end (a search's input, a passage's sources), bounded. */
  private readonly held = new HeldOutput();

  constructor(private readonly toolNames: ToolNameMap) {}

  read({ event, data }: SseEvent, writer: TurnStreamWriter): string {
    if (this.ended) return '';
    const payload = object(tryParse(data));
    // Dispatch on the payload's type: the `event:` line must equal it, but the data is what counts.
    const type = typeof payload.type === 'string' ? payload.type : event;
    if (type === 'ping') return '';
    if (type === 'error') return this.fail(writer, upstreamStreamError(object(payload.error)));
    if (Object.keys(payload).length === 0) {
      return this.fail(writer, new GatewayError('TOLLGATE_ERR_UPSTREAM_INVALID_RESPONSE', 'The upstream provider sent an unreadable stream event.'));
    }
    if (!this.started && type !== 'message_start') {
      return this.fail(writer, new GatewayError('TOLLGATE_ERR_UPSTREAM_INVALID_RESPONSE', 'The upstream stream did not begin with message_start.'));
    }
    switch (type) {
      case 'message_start':
        return this.messageStart(payload, writer);
      case 'content_block_start':
        return this.blockStart(object(payload.content_block), writer);
      case 'content_block_delta':
        return this.blockDelta(object(payload.delta), writer);
      case 'content_block_stop':
        return this.blockStop(writer);
      case 'message_delta':
        return this.messageDelta(payload);
      case 'message_stop':
        return this.messageStop(writer);
      default:
        return ''; // new event types may appear without a version bump (docs/protocols.md#messages-stream)
    }
  }

  /** An unreadable usage report spoils the stream's usage for good: billing then counts for itself. */
  private fold(counts: Counts | null): void {
    if (counts === null) this.unreadable = true;
    else this.counts = counts;
  }

  usage(): Usage | null {
    // Object.assign, not a spread followed by `source`: that is copied on V8's slow path (docs/benchmarks.md).
    return this.unreadable || this.counts === null ? null : Object.assign({}, this.counts, { source: 'upstream' as const });
  }

  private messageStart(payload: Json, writer: TurnStreamWriter): string {
    if (this.started) return '';
    this.started = true;
    const usage = object(object(payload.message).usage);
    if (Object.keys(usage).length > 0) this.fold(messagesUsage(usage));
    return writer.start(this.usage() ?? undefined);
  }

  private blockStart(block: Json, writer: TurnStreamWriter): string {
    this.block = { kind: 'other' };
    this.held.release();
    switch (block.type) {
      case 'text': {
        const text = typeof block.text === 'string' ? block.text : '';
        const sources = citedSources(block.citations);
        this.held.hold(sources.reduce((chars, source) => chars + heldSourceChars(source), 0));
        const length = new CodePointCount();
        length.add(text);
        this.block = { kind: 'text', length, sources };
        return writer.text(text);
      }
      case 'server_tool_use':
        // Only the search Tollgate declares is relayed; any other server tool's blocks are not the client's.
        this.block = block.name === WEB_SEARCH_TOOL_NAME ? { kind: 'search', id: stringField(block.id), input: '' } : { kind: 'skipped' };
        return '';
      case 'web_search_tool_result': {
        this.block = { kind: 'skipped' };
        const { sources, error } = searchOutcome(block.content);
        return writer.webSearchEnd(stringField(block.tool_use_id), sources, error);
      }
      case 'tool_use':
        return writer.toolCallStart(stringField(block.id), this.toolNames.client(stringField(block.name)));
      case 'thinking':
        return writer.thinking(typeof block.thinking === 'string' ? block.thinking : '');
      case 'redacted_thinking':
        return writer.redactedThinking(stringField(block.data));
      default:
        this.block = { kind: 'skipped' };
        return '';
    }
  }

  private blockStop(writer: TurnStreamWriter): string {
    const block = this.block;
    this.block = { kind: 'other' };
    switch (block.kind) {
      case 'search':
        return writer.webSearchStart(block.id, searchQuery(block.input || '{}'));
      case 'text':
        return block.sources.length > 0 && block.length.total > 0 ? writer.citations(block.length.total, block.sources) : '';
      case 'skipped':
        return '';
      case 'other':
        return writer.blockEnd();
    }
  }

  private blockDelta(delta: Json, writer: TurnStreamWriter): string {
    const block = this.block;
    switch (delta.type) {
      case 'text_delta': {
        const text = stringField(delta.text);
        const frames = writer.text(text);
        if (block.kind === 'text') block.length.add(text);
        return frames;
      }
      case 'input_json_delta':
        if (block.kind === 'search') {
          const fragment = stringField(delta.partial_json);
          this.held.hold(fragment.length);
          block.input += fragment;
          return '';
        }
        if (block.kind === 'skipped') return '';
        return writer.toolCallArguments(stringField(delta.partial_json));
      case 'citations_delta': {
        const source = citedSource(delta.citation);
        if (block.kind === 'text' && source !== null && !block.sources.some((seen) => seen.url === source.url)) {
          this.held.hold(heldSourceChars(source));
          block.sources.push(source);
        }
        return '';
      }
      case 'thinking_delta':
        return writer.thinking(stringField(delta.thinking));
      case 'signature_delta':
        return writer.thinkingSignature(stringField(delta.signature));
      default:
        return '';
    }
  }

  /**
   * Usage values here are cumulative totals: they overwrite what message_start said
   * (docs/protocols.md#messages-stream).
   */
  private messageDelta(payload: Json): string {
    const delta = object(payload.delta);
    if ('stop_reason' in delta && delta.stop_reason !== null) {
      this.stop = stopFromMessages(delta.stop_reason);
      this.stopSeen = true;
    }
    if (typeof delta.stop_sequence === 'string') this.stopSequence = delta.stop_sequence;
    const usage = object(payload.usage);
    if (Object.keys(usage).length > 0) this.fold(messagesUsage(usage, this.counts ?? undefined));
    return '';
  }

  private messageStop(writer: TurnStreamWriter): string {
    if (!this.stopSeen) {
      return this.fail(writer, new GatewayError('TOLLGATE_ERR_UPSTREAM_INVALID_RESPONSE', 'The upstream stream ended without a stop reason.'));
    }
    this.ended = true;
    const usage = this.usage() ?? { ...NO_TOKENS, toolCalls: {}, source: 'upstream' as const };
    return writer.finish(this.stop, usage, this.stopSequence);
  }

  private fail(writer: TurnStreamWriter, error: GatewayError): string {
    this.ended = true;
    this.upstreamError = error;
    return writer.fail(error);
  }
}
