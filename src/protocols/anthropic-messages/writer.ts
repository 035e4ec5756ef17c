/**
 * Writes Anthropic Messages replies (docs/protocols.md#messages-reply, docs/protocols.md#messages-stream):
 * the `message` object and its event stream. Every frame carries an `event:` line equal to the payload's
 * `type`, because the Anthropic SDK drops frames without one (docs/protocols.md#fact-3).
 */
import { randomHex } from '../../random-hex';
import { object } from '../../json';
import type { GatewayError } from '../../kernel/errors';
import { streamErrorFrame } from '../errors';
import { sseFrame } from '../sse';
import { cacheWriteTotal, NO_TOKENS, type Usage } from '../types';
import type { AssistantTurn, TurnStop, TurnStreamWriter } from '../turn';

/** Messages `stop_reason` values Tollgate emits (a client SDK accepts only its own strings). */
export type MessagesStopReason = 'end_turn' | 'stop_sequence' | 'max_tokens' | 'tool_use' | 'refusal';

/** The Messages `usage` object; `input_tokens` excludes the cache reads and writes. */
interface MessagesUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  output_tokens: number;
}

/** A content block of the reply. */
type MessagesContentBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> }
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string };

/** The non-streamed reply (`type: "message"`). */
export interface MessagesMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: MessagesContentBlock[];
  stop_reason: MessagesStopReason | null;
  stop_sequence: string | null;
  stop_details: null;
  usage: MessagesUsage;
}

const STOP_REASONS: Readonly<Record<TurnStop, MessagesStopReason>> = {
  end: 'end_turn',
  stop_sequence: 'stop_sequence',
  max_tokens: 'max_tokens',
  tool_use: 'tool_use',
  refusal: 'refusal',
};

/** The Messages `stop_reason` for a neutral stop (docs/protocols.md#stop-reasons). */
export function messagesStopReason(stop: TurnStop): MessagesStopReason {
  return STOP_REASONS[stop];
}

/** Neutral usage in Messages terms (the neutral form is Anthropic's, so this only renames). */
function toMessagesUsage(usage: Usage): MessagesUsage {
  return {
    input_tokens: usage.inputTokens,
    cache_creation_input_tokens: cacheWriteTotal(usage),
    cache_read_input_tokens: usage.cacheReadTokens,
    output_tokens: usage.outputTokens,
  };
}

/** A fresh `msg_…` id. */
function newMessageId(): string {
  return `msg_${randomHex(12)}`;
}

/**
 * Tool input as the object Messages requires. Arguments that are not a JSON object (a call cut short
 * by max tokens) cannot be represented as `input`, so they become `{}` rather than a broken reply.
 */
function toolInput(args: string): Record<string, unknown> {
  if (args === '') return {};
  try {
    const parsed: unknown = JSON.parse(args);
    return object(parsed);
  } catch {
    return {};
  }
}

/** Builds the complete non-streamed Messages object for a turn; adjacent text parts share a block. */
export function buildMessage(turn: AssistantTurn): MessagesMessage {
  const content: MessagesContentBlock[] = [];
  for (const part of turn.parts) {
    const last = content[content.length - 1];
    if (part.type === 'text') {
      if (part.text === '') continue; // the API rejects empty text blocks, so never emit one
      if (last?.type === 'text') last.text += part.text;
      else content.push({ type: 'text', text: part.text });
    } else if (part.type === 'tool_call') {
      content.push({ type: 'tool_use', id: part.id, name: part.name, input: toolInput(part.arguments) });
    } else if (part.type === 'thinking') {
      content.push({ type: 'thinking', thinking: part.text, signature: part.signature });
    } else if (part.type === 'redacted_thinking') {
      content.push({ type: 'redacted_thinking', data: part.data });
    }
    // A provider-side search has no Messages form without the encrypted results only Anthropic returns
    // (and a Messages client is answered natively by Anthropic models): its findings are in the text.
  }
  return {
    id: turn.id ?? newMessageId(),
    type: 'message',
    role: 'assistant',
    model: turn.model,
    content,
    stop_reason: messagesStopReason(turn.stop),
    stop_sequence: turn.stop === 'stop_sequence' ? (turn.stopSequence ?? null) : null,
    stop_details: null,
    usage: toMessagesUsage(turn.usage),
  };
}

/** Options of a Messages stream. */
export interface MessagesStreamOptions {
  readonly id?: string;
  readonly model: string;
}

type BlockType = 'text' | 'tool_use' | 'thinking' | 'redacted_thinking';

const NO_USAGE: Usage = { ...NO_TOKENS, toolCalls: {}, source: 'upstream' };

/**
 * Writes one Messages stream: `message_start`, content blocks (start, deltas, stop) with indexes that
 * count every block, `message_delta` with cumulative usage, `message_stop`.
 */
export class MessagesStreamWriter implements TurnStreamWriter {
  readonly id: string;
  private readonly model: string;
  private blockCount = 0;
  private openBlock: { index: number; type: BlockType } | null = null;

  constructor(options: MessagesStreamOptions) {
    this.id = options.id ?? newMessageId();
    this.model = options.model;
  }

  /** `message_start`, with the input usage when known (zeros otherwise; `message_delta` corrects it). */
  start(usage: Usage = NO_USAGE): string {
    return this.event('message_start', {
      message: {
        id: this.id,
        type: 'message',
        role: 'assistant',
        model: this.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        stop_details: null,
        usage: toMessagesUsage(usage),
      },
    });
  }

  /** A `text_delta`, opening a text block first when another kind of block (or none) is open. */
  text(delta: string): string {
    if (delta === '') return '';
    let frames = '';
    if (this.openBlock?.type !== 'text') {
      frames += this.blockStop();
      frames += this.blockStart('text', { type: 'text', text: '' });
    }
    return frames + this.event('content_block_delta', { index: this.currentIndex(), delta: { type: 'text_delta', text: delta } });
  }

  /** Opens a `tool_use` block with `input: {}`; the arguments follow as `input_json_delta`. */
  toolCallStart(id: string, name: string): string {
    return this.blockStop() + this.blockStart('tool_use', { type: 'tool_use', id, name, input: {} });
  }

  toolCallArguments(fragment: string): string {
    if (this.openBlock?.type !== 'tool_use') throw new Error('toolCallArguments() without an open tool_use block');
    if (fragment === '') return '';
    return this.event('content_block_delta', {
      index: this.currentIndex(),
      delta: { type: 'input_json_delta', partial_json: fragment },
    });
  }

  /** Closes the tool_use block; Messages needs no `{}` filler, `input` started as `{}`. */
  toolCallEnd(): string {
    return this.openBlock?.type === 'tool_use' ? this.blockStop() : '';
  }

  /** A `thinking_delta`, opening a thinking block first when none is open. */
  thinking(delta: string): string {
    if (delta === '') return '';
    return this.thinkingBlock() + this.event('content_block_delta', { index: this.currentIndex(), delta: { type: 'thinking_delta', thinking: delta } });
  }

  /** The `signature_delta` that seals the open thinking block. */
  thinkingSignature(signature: string): string {
    return this.thinkingBlock() + this.event('content_block_delta', { index: this.currentIndex(), delta: { type: 'signature_delta', signature } });
  }

  /** A whole `redacted_thinking` block: its data arrives complete in `content_block_start`. */
  /** Searches come only from Anthropic upstreams, which a Messages client reaches without a writer. */
  webSearchStart(): string {
    return '';
  }

  webSearchEnd(): string {
    return '';
  }

  citations(): string {
    return '';
  }

  redactedThinking(data: string): string {
    return this.blockStop() + this.blockStart('redacted_thinking', { type: 'redacted_thinking', data }) + this.blockStop();
  }

  blockEnd(): string {
    return this.blockStop();
  }

  /** An `error` event, which the Anthropic SDK throws on; no `message_stop` follows. */
  fail(error: GatewayError): string {
    return streamErrorFrame(error, 'messages');
  }

  private thinkingBlock(): string {
    if (this.openBlock?.type === 'thinking') return '';
    return this.blockStop() + this.blockStart('thinking', { type: 'thinking', thinking: '', signature: '' });
  }

  /** `content_block_stop` for the open block, if any. */
  blockStop(): string {
    if (this.openBlock === null) return '';
    const index = this.openBlock.index;
    this.openBlock = null;
    return this.event('content_block_stop', { index });
  }

  /** Closes the open block, then `message_delta` (stop reason, cumulative usage) and `message_stop`. */
  finish(stop: TurnStop, usage: Usage, stopSequence: string | null = null): string {
    return this.blockStop() + this.messageDelta(stop, usage, stopSequence) + this.event('message_stop', {});
  }

  /**
   * Only the `message_delta` event. Its usage values are totals that overwrite, never add
   * (docs/protocols.md#messages-stream).
   */
  messageDelta(stop: TurnStop, usage: Usage, stopSequence: string | null = null): string {
    return this.event('message_delta', {
      delta: { stop_reason: messagesStopReason(stop), stop_sequence: stop === 'stop_sequence' ? stopSequence : null },
      usage: toMessagesUsage(usage),
    });
  }

  /** A `ping`, to keep proxies from closing a quiet stream. */
  ping(): string {
    return this.event('ping', {});
  }

  private blockStart(type: BlockType, contentBlock: object): string {
    const index = this.blockCount++;
    this.openBlock = { index, type };
    return this.event('content_block_start', { index, content_block: contentBlock });
  }

  private currentIndex(): number {
    if (this.openBlock === null) throw new Error('no open content block');
    return this.openBlock.index;
  }

  private event(type: string, payload: object): string {
    return sseFrame(type, JSON.stringify({ type, ...payload }));
  }
}
