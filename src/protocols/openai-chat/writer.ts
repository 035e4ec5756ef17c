/**
 * Writes Chat Completions replies (docs/protocols.md#chat-reply, docs/protocols.md#chat-stream): the
 * `chat.completion` object and the `chat.completion.chunk` stream. The echo provider and every translator
 * that answers a chat client go through here, so all of them emit the same shapes.
 */
import { randomHex } from '../../random-hex';
import type { GatewayError } from '../../kernel/errors';
import { streamErrorFrame } from '../errors';
import { CodePointCount } from '../code-point-count';
import { HeldOutput } from '../held-output';
import { sseFrame } from '../sse';
import { codePoints } from '../openai-responses/items';
import type { AssistantTurn, ThinkingPart, TurnStop, TurnStreamWriter, WebSource } from '../turn';
import { cacheWriteTotal, type Usage } from '../types';

/** Chat `finish_reason` values. */
export type ChatFinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter';

/** The chat `usage` object; `cached_tokens` and `cache_write_tokens` are subsets of `prompt_tokens`. */
export interface ChatUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  completion_tokens_details: { reasoning_tokens: number };
}

/**
 * A signed reasoning block, in the non-standard `thinking_blocks` field LiteLLM introduced: a client
 * that sends it back on the assistant message lets the next turn continue the model's reasoning.
 */
type ChatThinkingBlock =
  | { type: 'thinking'; thinking: string; signature: string }
  | { type: 'redacted_thinking'; data: string };

/**
 * A passage of the message that cites a web page; the indexes count Unicode code points of `content`
 * (end exclusive), as Python's string indexes do.
 */
interface ChatUrlCitation {
  type: 'url_citation';
  url_citation: { url: string; title: string; start_index: number; end_index: number };
}

/** A tool call as it appears in `message.tool_calls`. */
interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
  /** On the first call of a turn that reasoned: the message's `thinking_blocks` again (see buildChatCompletion). */
  thinking_blocks?: ChatThinkingBlock[];
}

/** The non-streamed reply (`object: "chat.completion"`). */
export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: [
    {
      index: 0;
      message: {
        role: 'assistant';
        content: string | null;
        refusal: null;
        /** Non-standard (DeepSeek, LiteLLM): the model's reasoning text, when it reasoned. */
        reasoning_content?: string;
        thinking_blocks?: ChatThinkingBlock[];
        tool_calls?: ChatToolCall[];
        annotations: ChatUrlCitation[];
      };
      logprobs: null;
      finish_reason: ChatFinishReason;
    },
  ];
  usage: ChatUsage;
}

/** A tool-call fragment inside a chunk's `delta`; only the first fragment of a call has id/type/name. */
interface ChatToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

/** One streamed chunk (`object: "chat.completion.chunk"`). */
export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{
    index: 0;
    delta: {
      role?: 'assistant';
      content?: string;
      reasoning_content?: string;
      thinking_blocks?: ChatThinkingBlock[];
      tool_calls?: ChatToolCallDelta[];
      /** A passage's citations, sent once the passage has been (as LiteLLM streams them). */
      annotations?: ChatUrlCitation[];
    };
    logprobs: null;
    finish_reason: ChatFinishReason | null;
  }>;
  /** Present only when the client asked for `stream_options.include_usage`. */
  usage?: ChatUsage | null;
}

const FINISH_REASONS: Readonly<Record<TurnStop, ChatFinishReason>> = {
  end: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

/** The chat `finish_reason` for a neutral stop (docs/protocols.md#stop-reasons). */
export function chatFinishReason(stop: TurnStop): ChatFinishReason {
  return FINISH_REASONS[stop];
}

/**
 * Neutral usage in chat terms: the prompt count includes the cache reads and writes
 * (docs/protocols.md#usage).
 */
function toChatUsage(usage: Usage): ChatUsage {
  const prompt = usage.inputTokens + cacheWriteTotal(usage) + usage.cacheReadTokens;
  return {
    prompt_tokens: prompt,
    completion_tokens: usage.outputTokens,
    total_tokens: prompt + usage.outputTokens,
    prompt_tokens_details: { cached_tokens: usage.cacheReadTokens, cache_write_tokens: cacheWriteTotal(usage) },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
}

/** A fresh `chatcmpl-…` id. */
function newChatCompletionId(): string {
  return `chatcmpl-${randomHex(12)}`;
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

function thinkingBlock(part: ThinkingPart): ChatThinkingBlock {
  return part.type === 'thinking'
    ? { type: 'thinking', thinking: part.text, signature: part.signature }
    : { type: 'redacted_thinking', data: part.data };
}

/** The annotations of a passage of `length` code points that starts `start` code points into the content. */
function chatCitations(start: number, length: number, sources: readonly WebSource[]): ChatUrlCitation[] {
  return sources.map((source) => ({
    type: 'url_citation',
    url_citation: { url: source.url, title: source.title ?? '', start_index: start, end_index: start + length },
  }));
}

/** The citations of every text part, placed in the content the parts are joined into. */
function contentCitations(turn: AssistantTurn): ChatUrlCitation[] {
  const annotations: ChatUrlCitation[] = [];
  let offset = 0;
  for (const part of turn.parts) {
    if (part.type !== 'text') continue;
    const length = codePoints(part.text);
    if (part.citations !== undefined) annotations.push(...chatCitations(offset, length, part.citations));
    offset += length;
  }
  return annotations;
}

/** Builds the complete non-streamed `chat.completion` object for a turn. */
export function buildChatCompletion(turn: AssistantTurn): ChatCompletion {
  const text = turn.parts.map((part) => (part.type === 'text' ? part.text : '')).join('');
  const thinking = turn.parts.filter((part): part is ThinkingPart => part.type === 'thinking' || part.type === 'redacted_thinking');
  const toolCalls: ChatToolCall[] = [];
  for (const part of turn.parts) {
    if (part.type !== 'tool_call') continue;
    toolCalls.push({ id: part.id, type: 'function', function: { name: part.name, arguments: part.arguments || '{}' } });
  }
  const message: ChatCompletion['choices'][0]['message'] = {
    role: 'assistant',
    // OpenAI sends null content beside tool calls, and "" for an empty answer.
    content: text === '' && toolCalls.length > 0 ? null : text,
    refusal: null,
    annotations: contentCitations(turn),
  };
  if (thinking.length > 0) {
    message.reasoning_content = thinking.map((part) => (part.type === 'thinking' ? part.text : '')).join('');
    message.thinking_blocks = thinking.map(thinkingBlock);
    // Clients that rebuild the assistant message from its tool calls keep only the calls' own extra
    // fields (the OpenAI Agents SDK copies them back onto the call and the message), so the first
    // call carries the signed blocks too: without them the next turn would lose its thinking.
    if (toolCalls.length > 0) toolCalls[0].thinking_blocks = message.thinking_blocks;
  }
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  return {
    id: turn.id ?? newChatCompletionId(),
    object: 'chat.completion',
    created: turn.created ?? nowSeconds(),
    model: turn.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: chatFinishReason(turn.stop) }],
    usage: toChatUsage(turn.usage),
  };
}

/** Options of a chat stream. */
export interface ChatStreamOptions {
  readonly id?: string;
  readonly model: string;
  readonly created?: number;
  /** `stream_options.include_usage`: adds the `choices: []` usage chunk and `usage: null` elsewhere. */
  readonly includeUsage: boolean;
}

/** The frame that ends every chat stream. */
const CHAT_DONE_FRAME = sseFrame(null, '[DONE]');

/**
 * Writes one chat stream. Every chunk shares the id and `created`; tool calls get their own index
 * counter because chat counts tool calls only, not content blocks (docs/protocols.md#fact-8).
 */
export class ChatStreamWriter implements TurnStreamWriter {
  readonly id: string;
  readonly created: number;
  private readonly model: string;
  private readonly includeUsage: boolean;
  private toolCallCount = 0;
  private openToolCall: { index: number; argumentsSeen: boolean } | null = null;
  /** The length of the content sent so far, in code points: where a cited passage starts. */
  private readonly contentLength = new CodePointCount();
  /** The reasoning text of the block under way, repeated with its signature when the block is signed. */
  private thinkingText = '';
  /** What `thinkingText` holds, bounded: a reasoning block is the one thing a chat stream repeats. */
  private readonly thinkingHeld = new HeldOutput();
  /** The start of every chunk's JSON, up to its choices. */
  private chunkHead: string | null = null;

  constructor(options: ChatStreamOptions) {
    this.id = options.id ?? newChatCompletionId();
    this.created = options.created ?? nowSeconds();
    this.model = options.model;
    this.includeUsage = options.includeUsage;
  }

  /** The first chunk: the role, with empty content (the SDK's stream helper needs the role). */
  start(): string {
    return this.chunk({ role: 'assistant', content: '' });
  }

  text(delta: string): string {
    if (delta === '') return '';
    this.contentLength.add(delta);
    return this.chunk({ content: delta });
  }

  /** Chat has no item for a search: what it found reaches the client as the answer's citations. */
  webSearchStart(): string {
    return '';
  }

  webSearchEnd(): string {
    return '';
  }

  /** The passage just sent, as an `annotations` delta. */
  citations(citedLength: number, sources: readonly WebSource[]): string {
    if (sources.length === 0) return '';
    return this.chunk({ annotations: chatCitations(this.contentLength.total - citedLength, citedLength, sources) });
  }

  /** The first fragment of a call carries id, `type: "function"`, the name and `arguments: ""`. */
  toolCallStart(id: string, name: string): string {
    const closing = this.toolCallEnd();
    const index = this.toolCallCount++;
    this.openToolCall = { index, argumentsSeen: false };
    return closing + this.chunk({ tool_calls: [{ index, id, type: 'function', function: { name, arguments: '' } }] });
  }

  toolCallArguments(fragment: string): string {
    if (this.openToolCall === null) throw new Error('toolCallArguments() without an open tool call');
    if (fragment === '') return '';
    this.openToolCall.argumentsSeen = true;
    return this.chunk({ tool_calls: [{ index: this.openToolCall.index, function: { arguments: fragment } }] });
  }

  toolCallEnd(): string {
    const call = this.openToolCall;
    if (call === null) return '';
    this.openToolCall = null;
    return call.argumentsSeen ? '' : this.chunk({ tool_calls: [{ index: call.index, function: { arguments: '{}' } }] });
  }

  /** Reasoning streams as `reasoning_content`, the field OpenAI-compatible clients read it from. */
  thinking(delta: string): string {
    if (delta === '') return '';
    this.thinkingHeld.hold(delta.length);
    this.thinkingText += delta;
    return this.chunk({ reasoning_content: delta });
  }

  /**
   * The signature closes a reasoning block: the block is sent whole in `thinking_blocks`, so a client
   * collects those deltas and returns them as they are, with no reassembly.
   */
  thinkingSignature(signature: string): string {
    const block: ChatThinkingBlock = { type: 'thinking', thinking: this.thinkingText, signature };
    this.endThinking();
    return this.chunk({ thinking_blocks: [block] });
  }

  redactedThinking(data: string): string {
    return this.chunk({ thinking_blocks: [{ type: 'redacted_thinking', data }] });
  }

  /** Chat has no blocks; only an open tool call needs closing. */
  blockEnd(): string {
    this.endThinking();
    return this.toolCallEnd();
  }

  private endThinking(): void {
    this.thinkingText = '';
    this.thinkingHeld.release();
  }

  /** A `data: {"error": …}` frame, which openai-node throws on; no `[DONE]` follows. */
  fail(error: GatewayError): string {
    return streamErrorFrame(error, 'chat');
  }

  /** The `delta: {}` chunk with the finish reason, the usage chunk when asked for, then `[DONE]`. */
  finish(stop: TurnStop, usage: Usage): string {
    return this.toolCallEnd() + this.finishChunk(stop) + this.usageChunk(usage) + CHAT_DONE_FRAME;
  }

  /** Only the chunk that carries the finish reason. */
  finishChunk(stop: TurnStop): string {
    return this.frame([{ index: 0, delta: {}, logprobs: null, finish_reason: chatFinishReason(stop) }], null);
  }

  /** Only the `choices: []` usage chunk; '' when the client did not ask for usage. */
  usageChunk(usage: Usage): string {
    return this.includeUsage ? this.frame([], toChatUsage(usage)) : '';
  }

  private chunk(delta: ChatCompletionChunk['choices'][number]['delta']): string {
    return this.frame([{ index: 0, delta, logprobs: null, finish_reason: null }], null);
  }

  /**
   * One chunk, as `JSON.stringify` would write a `ChatCompletionChunk` (the same keys in the same
   * order): the fields every chunk of the stream shares are serialised once, only `choices` and
   * `usage` per chunk. A translated stream writes one per upstream event.
   */
  private frame(choices: ChatCompletionChunk['choices'], usage: ChatUsage | null): string {
    this.chunkHead ??= `{"id":${JSON.stringify(this.id)},"object":"chat.completion.chunk","created":${JSON.stringify(this.created)},"model":${JSON.stringify(this.model)},"choices":`;
    const tail = this.includeUsage ? `,"usage":${JSON.stringify(usage)}}` : '}';
    return sseFrame(null, `${this.chunkHead}${JSON.stringify(choices)}${tail}`);
  }
}
