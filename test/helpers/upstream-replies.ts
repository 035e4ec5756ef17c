/**
 * Builders for what the fake upstream answers: Anthropic Messages, OpenAI Chat Completions and
 * Responses, plain or streamed, plus the vendors' error bodies. Each builder returns one step for
 * `FakeUpstream.enqueue`, so a test scripts a tool call or an upstream error in one line:
 *
 *   fake.enqueue(anthropicToolUse({ name: 'get_weather', input: { city: 'Paris' } }));
 *   fake.enqueue(openaiError(400, 'bad things'));
 *
 * Shapes follow docs/protocols.md#chat-reply, chat-stream, responses-reply, responses-stream, messages-reply
 * and messages-stream; usage numbers are realistic but deterministic (about four characters per token).
 */
import type { JsonReply, SseEvent, SseReply, UpstreamStep } from './fake-upstream';

/** The text every default reply answers with. */
const DEFAULT_REPLY_TEXT = 'Hello from the fake upstream.';

/** Options shared by the success builders. */
export interface ReplyOptions {
  readonly model?: string;
  readonly text?: string;
  /** The message / completion / response id; a fresh one when absent. */
  readonly id?: string;
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  /** Extra response headers (e.g. `set-cookie`, `request-id`). */
  readonly headers?: Readonly<Record<string, string | readonly string[]>>;
}

export interface ToolUseOptions extends Omit<ReplyOptions, 'text'> {
  readonly name: string;
  readonly input: Readonly<Record<string, unknown>>;
  /** The tool_use block id; `toolu_fake…` when absent. */
  readonly toolUseId?: string;
  /** Text the assistant says before calling the tool; none when absent. */
  readonly text?: string;
}

export interface ChatStreamOptions extends ReplyOptions {
  /** Adds the final `choices: []` usage chunk (and `usage: null` on the others), as `stream_options.include_usage` asks. */
  readonly includeUsage?: boolean;
}

let counter = 0;
function nextId(prefix: string): string {
  counter += 1;
  return `${prefix}${counter.toString().padStart(6, '0')}fake`;
}

/** A rough token count (four characters per token), never 0 for non-empty text. */
function estimateTokens(text: string): number {
  return text.length === 0 ? 0 : Math.max(1, Math.ceil(text.length / 4));
}

/** Splits `text` into a few fragments at word boundaries, so streams carry more than one delta. */
function fragments(text: string, parts = 3): string[] {
  const words = text.split(/(?<= )/);
  if (words.length <= 1) return [text];
  const size = Math.ceil(words.length / parts);
  const out: string[] = [];
  for (let i = 0; i < words.length; i += size) out.push(words.slice(i, i + size).join(''));
  return out;
}

function unixSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

// ---------------------------------------------------------------------------------------------------
// Anthropic Messages
// ---------------------------------------------------------------------------------------------------

interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

type AnthropicBlock =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; id: string; name: string; input: Readonly<Record<string, unknown>> };

function anthropicUsage(input: number, output: number): AnthropicUsage {
  return { input_tokens: input, output_tokens: output, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
}

function anthropicBody(
  id: string,
  model: string,
  content: AnthropicBlock[],
  stopReason: string | null,
  usage: AnthropicUsage,
): Record<string, unknown> {
  return { id, type: 'message', role: 'assistant', model, content, stop_reason: stopReason, stop_sequence: null, usage };
}

/** A complete Messages response (`stop_reason: end_turn`) with one text block. */
export function anthropicMessage(options: ReplyOptions = {}): JsonReply {
  const text = options.text ?? DEFAULT_REPLY_TEXT;
  const usage = anthropicUsage(options.inputTokens ?? 12, options.outputTokens ?? estimateTokens(text));
  return {
    status: 200,
    headers: { 'request-id': nextId('req_'), ...options.headers },
    json: anthropicBody(options.id ?? nextId('msg_'), options.model ?? 'claude-sonnet-5', [{ type: 'text', text }], 'end_turn', usage),
  };
}

/** The events of one streamed Messages response carrying `blocks`, ending with `stopReason`. */
function anthropicEvents(
  id: string,
  model: string,
  blocks: AnthropicBlock[],
  stopReason: string,
  inputTokens: number,
  outputTokens: number,
): SseEvent[] {
  const events: SseEvent[] = [];
  const push = (event: string, data: Record<string, unknown>) => events.push({ event, data: { type: event, ...data } });
  push('message_start', { message: anthropicBody(id, model, [], null, anthropicUsage(inputTokens, 1)) });
  push('ping', {});
  blocks.forEach((block, index) => {
    if (block.type === 'text') {
      push('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const piece of fragments(block.text)) push('content_block_delta', { index, delta: { type: 'text_delta', text: piece } });
    } else {
      push('content_block_start', { index, content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} } });
      const json = JSON.stringify(block.input);
      const half = Math.ceil(json.length / 2);
      for (const piece of [json.slice(0, half), json.slice(half)]) {
        if (piece !== '') push('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } });
      }
    }
    push('content_block_stop', { index });
  });
  push('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: outputTokens } });
  push('message_stop', {});
  return events;
}

/** A streamed Messages response: message_start, ping, one text block in fragments, message_delta, message_stop. */
export function anthropicStream(options: ReplyOptions = {}): SseReply {
  const text = options.text ?? DEFAULT_REPLY_TEXT;
  return {
    status: 200,
    headers: { 'request-id': nextId('req_'), ...options.headers },
    events: anthropicEvents(
      options.id ?? nextId('msg_'),
      options.model ?? 'claude-sonnet-5',
      [{ type: 'text', text }],
      'end_turn',
      options.inputTokens ?? 12,
      options.outputTokens ?? estimateTokens(text),
    ),
  };
}

function toolBlocks(options: ToolUseOptions): AnthropicBlock[] {
  const blocks: AnthropicBlock[] = [];
  if (options.text !== undefined) blocks.push({ type: 'text', text: options.text });
  blocks.push({ type: 'tool_use', id: options.toolUseId ?? nextId('toolu_'), name: options.name, input: options.input });
  return blocks;
}

/** A Messages response that calls a tool (`stop_reason: tool_use`); streamed when `stream` is true. */
export function anthropicToolUse(options: ToolUseOptions & { readonly stream?: boolean }): JsonReply | SseReply {
  const blocks = toolBlocks(options);
  const id = options.id ?? nextId('msg_');
  const model = options.model ?? 'claude-sonnet-5';
  const input = options.inputTokens ?? 40;
  const output = options.outputTokens ?? 20;
  const headers = { 'request-id': nextId('req_'), ...options.headers };
  if (options.stream === true) {
    return { status: 200, headers, events: anthropicEvents(id, model, blocks, 'tool_use', input, output) };
  }
  return { status: 200, headers, json: anthropicBody(id, model, blocks, 'tool_use', anthropicUsage(input, output)) };
}

/** A count_tokens answer. */
export function countTokensReply(inputTokens = 42): JsonReply {
  return { status: 200, json: { input_tokens: inputTokens } };
}

/**
 * An Anthropic error body (`{"type":"error","error":{type,message},"request_id"}`) with `status`; like
 * Anthropic, a 4xx also carries `x-should-retry: false`.
 */
export function anthropicError(
  status: number,
  type: string,
  message: string,
  headers?: Readonly<Record<string, string | readonly string[]>>,
): JsonReply {
  return {
    status,
    headers: { ...(status < 500 ? { 'x-should-retry': 'false' } : {}), ...headers },
    json: { type: 'error', error: { type, message }, request_id: nextId('req_') },
  };
}

// ---------------------------------------------------------------------------------------------------
// OpenAI Chat Completions
// ---------------------------------------------------------------------------------------------------

function chatUsage(prompt: number, completion: number): Record<string, unknown> {
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

/** A complete `chat.completion` with one assistant message (`finish_reason: stop`). */
export function chatCompletion(options: ReplyOptions = {}): JsonReply {
  const text = options.text ?? DEFAULT_REPLY_TEXT;
  return {
    status: 200,
    headers: { 'x-request-id': nextId('req_'), ...options.headers },
    json: {
      id: options.id ?? nextId('chatcmpl-'),
      object: 'chat.completion',
      created: unixSeconds(),
      model: options.model ?? 'gpt-test',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: text, refusal: null, annotations: [] },
          logprobs: null,
          finish_reason: 'stop',
        },
      ],
      usage: chatUsage(options.inputTokens ?? 12, options.outputTokens ?? estimateTokens(text)),
      service_tier: 'default',
      system_fingerprint: 'fp_fake',
    },
  };
}

/** A streamed chat completion: role chunk, text fragments, finish chunk, optional usage chunk, `[DONE]`. */
export function chatStream(options: ChatStreamOptions = {}): SseReply {
  const text = options.text ?? DEFAULT_REPLY_TEXT;
  const id = options.id ?? nextId('chatcmpl-');
  const created = unixSeconds();
  const model = options.model ?? 'gpt-test';
  const includeUsage = options.includeUsage === true;
  const chunk = (delta: Record<string, unknown>, finish: string | null): SseEvent => ({
    data: {
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      system_fingerprint: 'fp_fake',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(includeUsage ? { usage: null } : {}),
    },
  });
  const events: SseEvent[] = [chunk({ role: 'assistant', content: '', refusal: null }, null)];
  for (const piece of fragments(text)) events.push(chunk({ content: piece }, null));
  events.push(chunk({}, 'stop'));
  if (includeUsage) {
    events.push({
      data: {
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        system_fingerprint: 'fp_fake',
        choices: [],
        usage: chatUsage(options.inputTokens ?? 12, options.outputTokens ?? estimateTokens(text)),
      },
    });
  }
  events.push({ data: '[DONE]' });
  return { status: 200, headers: { 'x-request-id': nextId('req_'), ...options.headers }, events };
}

/** An OpenAI error body (`{"error":{message,type,param,code}}`) with `status`. */
export function openaiError(
  status: number,
  message: string,
  options: { readonly type?: string; readonly code?: string | null; readonly param?: string | null } = {},
): JsonReply {
  return {
    status,
    json: {
      error: {
        message,
        type: options.type ?? (status >= 500 ? 'server_error' : 'invalid_request_error'),
        param: options.param ?? null,
        code: options.code ?? null,
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// OpenAI Responses
// ---------------------------------------------------------------------------------------------------

function responsesUsage(input: number, output: number): Record<string, unknown> {
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + output,
  };
}

function messageItem(id: string, text: string, status: string): Record<string, unknown> {
  return {
    type: 'message',
    id,
    status,
    role: 'assistant',
    content: status === 'completed' ? [{ type: 'output_text', text, annotations: [], logprobs: [] }] : [],
  };
}

function responseBody(
  id: string,
  model: string,
  status: string,
  output: Record<string, unknown>[],
  usage: Record<string, unknown> | null,
  createdAt: number,
): Record<string, unknown> {
  return {
    id,
    object: 'response',
    created_at: createdAt,
    status,
    background: false,
    error: null,
    incomplete_details: null,
    instructions: null,
    max_output_tokens: null,
    model,
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: true,
    temperature: 1,
    text: { format: { type: 'text' }, verbosity: 'medium' },
    tool_choice: 'auto',
    tools: [],
    top_p: 1,
    truncation: 'disabled',
    usage,
    user: null,
    metadata: {},
  };
}

/** A complete Responses object (`status: completed`) with one assistant message. */
export function responsesObject(options: ReplyOptions = {}): JsonReply {
  const text = options.text ?? DEFAULT_REPLY_TEXT;
  const usage = responsesUsage(options.inputTokens ?? 12, options.outputTokens ?? estimateTokens(text));
  return {
    status: 200,
    headers: { 'x-request-id': nextId('req_'), ...options.headers },
    json: responseBody(
      options.id ?? nextId('resp_'),
      options.model ?? 'gpt-test',
      'completed',
      [messageItem(nextId('msg_'), text, 'completed')],
      usage,
      unixSeconds(),
    ),
  };
}

/** A streamed Responses answer: created … output_text.delta ×N … completed, each with `event:` and `sequence_number`. */
export function responsesStream(options: ReplyOptions = {}): SseReply {
  const text = options.text ?? DEFAULT_REPLY_TEXT;
  const id = options.id ?? nextId('resp_');
  const model = options.model ?? 'gpt-test';
  const itemId = nextId('msg_');
  const createdAt = unixSeconds();
  const usage = responsesUsage(options.inputTokens ?? 12, options.outputTokens ?? estimateTokens(text));
  const part = { type: 'output_text', text, annotations: [] };
  const events: SseEvent[] = [];
  let sequence = 0;
  const push = (type: string, data: Record<string, unknown>) =>
    events.push({ event: type, data: { type, sequence_number: sequence++, ...data } });

  push('response.created', { response: responseBody(id, model, 'in_progress', [], null, createdAt) });
  push('response.in_progress', { response: responseBody(id, model, 'in_progress', [], null, createdAt) });
  push('response.output_item.added', { output_index: 0, item: messageItem(itemId, '', 'in_progress') });
  push('response.content_part.added', {
    item_id: itemId,
    output_index: 0,
    content_index: 0,
    part: { type: 'output_text', text: '', annotations: [] },
  });
  for (const delta of fragments(text)) {
    push('response.output_text.delta', { item_id: itemId, output_index: 0, content_index: 0, delta, logprobs: [] });
  }
  push('response.output_text.done', { item_id: itemId, output_index: 0, content_index: 0, text, logprobs: [] });
  push('response.content_part.done', { item_id: itemId, output_index: 0, content_index: 0, part });
  const done = messageItem(itemId, text, 'completed');
  push('response.output_item.done', { output_index: 0, item: done });
  push('response.completed', { response: responseBody(id, model, 'completed', [done], usage, createdAt) });
  return { status: 200, headers: { 'x-request-id': nextId('req_'), ...options.headers }, events };
}

// ---------------------------------------------------------------------------------------------------
// The fake's default: the protocol of the path, streamed when the body asks for it
// ---------------------------------------------------------------------------------------------------

interface RequestSummary {
  readonly model: string | undefined;
  readonly stream: boolean;
  readonly includeUsage: boolean;
}

function summarize(body: Buffer): RequestSummary {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    parsed = null;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return { model: undefined, stream: false, includeUsage: false };
  }
  const record = parsed as Record<string, unknown>;
  const options = record.stream_options;
  const includeUsage =
    options !== null && typeof options === 'object' && (options as Record<string, unknown>).include_usage === true;
  return {
    model: typeof record.model === 'string' ? record.model : undefined,
    stream: record.stream === true,
    includeUsage,
  };
}

/**
 * What the fake answers when no step is queued: a success in the protocol of `path` (query ignored),
 * echoing the request's model, streamed when the body says `"stream": true`; 404 for other paths.
 */
export function defaultReply(path: string, body: Buffer): UpstreamStep {
  const pathname = path.split('?')[0];
  const request = summarize(body);
  const inputTokens = Math.max(1, Math.ceil(body.length / 4));
  const options = { model: request.model, inputTokens };
  if (pathname.endsWith('/v1/messages/count_tokens')) return countTokensReply(inputTokens);
  if (pathname.endsWith('/v1/messages')) return request.stream ? anthropicStream(options) : anthropicMessage(options);
  if (pathname.endsWith('/chat/completions')) {
    return request.stream ? chatStream({ ...options, includeUsage: request.includeUsage }) : chatCompletion(options);
  }
  if (pathname.endsWith('/responses')) return request.stream ? responsesStream(options) : responsesObject(options);
  return openaiError(404, `fake upstream: no route for ${pathname}`, { code: 'unknown_url' });
}
