/**
 * The state machine that reads an OpenAI chat stream (docs/protocols.md#chat-stream) and drives the client's
 * writer. Fragments are relayed as they arrive; only the end waits: chat sends its usage chunk after
 * the finish reason, and a Messages client reads usage in `message_delta`, so the turn is finished
 * at `[DONE]`, once both are known.
 */
import { nonEmptyStringOrNull, object, tryParse, type Json } from '../../json';
import { GatewayError } from '../../kernel/errors';
import type { SseEvent } from '../../protocols/sse';
import type { TurnStop, TurnStreamWriter } from '../../protocols/turn';
import type { Usage } from '../../protocols/types';
import { upstreamStreamError } from '../errors';
import type { ToolNameMap } from '../tool-names';
import { invalidResponse, newToolCallId, NO_USAGE, reasoningText, stopFromChat, usageFromChat } from './chat-reply';
import type { ReplyStreamReader } from './types';

const DONE = '[DONE]';
/** Closed tool calls remembered, to name the error of a fragment sent for one. */
const CLOSED_CALLS_KEPT = 1024;

/** The tool call whose argument fragments are being relayed. */
interface OpenCall {
  /** The upstream's `tool_calls[].index`. */
  readonly index: number;
  readonly id: string;
}

export class ChatStreamReader implements ReplyStreamReader {
  ended = false;
  upstreamError: GatewayError | null = null;
  private started = false;
  /** Null until a finish reason arrives; `[DONE]` without one is a cut-short answer. */
  private stop: TurnStop | null = null;
  private refused = false;
  private counts: Usage | null = null;
  private openCall: OpenCall | null = null;
  /**
   * Calls already closed, the latest CLOSED_CALLS_KEPT of them (a stream of any length keeps a bounded
   * number; a fragment for an older one has no name and is refused all the same). Writers hold one
   * call open at a time, so a fragment for a closed call (interleaved calls) could only be relayed by
   * holding fragments back, which we never do.
   */
  private readonly closedCalls = new Set<number>();
  private callCount = 0;

  constructor(private readonly toolNames: ToolNameMap) {}

  /** Implements [ReplyStreamReader.read]. */
  read({ data }: SseEvent, writer: TurnStreamWriter): string {
    if (this.ended) return '';
    const payload = data.trim();
    if (payload === '') return ''; // an empty data line some proxies send to keep the connection up
    if (payload === DONE) return this.done(writer);
    const chunk = tryParse(payload);
    if (chunk === null || typeof chunk !== 'object' || Array.isArray(chunk)) {
      return this.fail(writer, invalidResponse('The upstream provider sent a stream chunk that is not a JSON object.'));
    }
    return this.readChunk(chunk as Json, writer);
  }

  /** Implements [ReplyStreamReader.usage]: null until the upstream sends a usage chunk. */
  usage(): Usage | null {
    return this.counts;
  }

  private readChunk(chunk: Json, writer: TurnStreamWriter): string {
    // openai-node throws on any chunk with an `error` key (docs/protocols.md#chat-stream): so do we.
    if (chunk.error !== undefined && chunk.error !== null) return this.fail(writer, streamError(chunk.error));
    const frames: string[] = [];
    if (!this.started) {
      this.started = true;
      frames.push(writer.start());
    }
    // Usage is a running total on the upstreams that repeat it: the latest overwrites.
    this.counts = usageFromChat(chunk.usage) ?? this.counts;
    const choice = Array.isArray(chunk.choices) ? object(chunk.choices[0]) : {};
    try {
      this.readDelta(object(choice.delta), writer, frames);
    } catch (err) {
      if (!(err instanceof GatewayError)) throw err;
      frames.push(this.fail(writer, err));
      return frames.join('');
    }
    if (typeof choice.finish_reason === 'string') this.stop = stopFromChat(choice.finish_reason);
    return frames.join('');
  }

  /** Relays one delta in the order a message reads: reasoning, text, refusal, tool calls. */
  private readDelta(delta: Json, writer: TurnStreamWriter, frames: string[]): void {
    const reasoning = reasoningText(delta);
    if (reasoning !== null) frames.push(this.closeCall(writer), writer.thinking(reasoning));
    const content = nonEmptyStringOrNull(delta.content);
    if (content !== null) frames.push(this.closeCall(writer), writer.text(content));
    const refusal = nonEmptyStringOrNull(delta.refusal);
    if (refusal !== null) {
      this.refused = true;
      frames.push(this.closeCall(writer), writer.text(refusal));
    }
    if (Array.isArray(delta.tool_calls)) {
      for (const entry of delta.tool_calls) this.readToolCall(object(entry), writer, frames);
    }
  }

  /**
   * One `tool_calls[]` entry. A new index, or a new id under the same index (some compatible
   * upstreams number every call 0), starts a call; anything else continues the open one.
   */
  private readToolCall(entry: Json, writer: TurnStreamWriter, frames: string[]): void {
    const fn = object(entry.function);
    const index = typeof entry.index === 'number' ? entry.index : null;
    const id = nonEmptyStringOrNull(entry.id);
    const open = this.openCall;
    const startsCall = open === null || (index !== null && index !== open.index) || (id !== null && id !== open.id);
    if (startsCall) {
      if (id === null && index !== null && this.closedCalls.has(index)) {
        throw invalidResponse('The upstream stream sent arguments for a tool call that had already ended.');
      }
      const name = nonEmptyStringOrNull(fn.name);
      if (name === null) throw invalidResponse('The upstream stream started a tool call without a function name.');
      frames.push(this.closeCall(writer));
      this.openCall = { index: index ?? this.callCount, id: id ?? newToolCallId() };
      this.callCount++;
      frames.push(writer.toolCallStart(this.openCall.id, this.toolNames.client(name)));
    }
    const fragment = nonEmptyStringOrNull(fn.arguments);
    if (fragment !== null) frames.push(writer.toolCallArguments(fragment));
  }

  /** Closes the open tool call, if any, before another kind of content. */
  private closeCall(writer: TurnStreamWriter): string {
    if (this.openCall === null) return '';
    this.closedCalls.delete(this.openCall.index);
    this.closedCalls.add(this.openCall.index);
    if (this.closedCalls.size > CLOSED_CALLS_KEPT) this.closedCalls.delete(this.closedCalls.values().next().value as number);
    this.openCall = null;
    return writer.toolCallEnd();
  }

  private done(writer: TurnStreamWriter): string {
    if (this.stop === null) {
      return this.fail(writer, new GatewayError('TOLLGATE_ERR_STREAM_INTERRUPTED', 'The upstream stream ended without a finish reason: the answer was cut short.'));
    }
    this.ended = true;
    return writer.finish(this.refused ? 'refusal' : this.stop, this.counts ?? NO_USAGE);
  }

  private fail(writer: TurnStreamWriter, error: GatewayError): string {
    this.ended = true;
    this.upstreamError = error;
    return writer.fail(error);
  }
}

/** An `error` chunk's payload as a gateway error; some upstreams send a bare string. */
function streamError(error: unknown): GatewayError {
  return upstreamStreamError(typeof error === 'string' ? { message: error } : object(error));
}
