/**
 * A deliberately cheap upstream for benchmarks: node:http, canned bodies built once, both protocols,
 * plain and streamed. It must cost far less than the gateway it is used to measure.
 *
 * A request body with `"stream": true` gets a stream of `tokens` content deltas, `deltaMs` apart (0:
 * all written at once): Chat Completions chunks ending in `data: [DONE]`, with a usage chunk when
 * `stream_options.include_usage` is set, the Anthropic Messages event sequence on `/messages`, or the
 * Responses event sequence on `/responses` (its final response carrying the whole message). The
 * role chunk (or message_start) and the first delta are written together, so time to first token is
 * the path's own. Anything else gets the plain canned reply.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

const CHAT_REPLY = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: 1767225600,
    model: 'bench-model',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the bench upstream.' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
  }),
);

const MESSAGES_REPLY = Buffer.from(
  JSON.stringify({
    id: 'msg_bench',
    type: 'message',
    role: 'assistant',
    model: 'bench-model',
    content: [{ type: 'text', text: 'Hello from the bench upstream.' }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 12, output_tokens: 7 },
  }),
);

export interface StreamShape {
  /** Content deltas per stream. */
  readonly tokens: number;
  /** Pause between deltas, in ms; 0 writes the whole stream in one go. */
  readonly deltaMs: number;
}

/** The stream shape from BENCH_TOKENS and BENCH_DELTA_MS (20 deltas, 1 ms apart by default). */
export function streamShapeFromEnv(env: NodeJS.ProcessEnv = process.env): StreamShape {
  return { tokens: Math.max(1, Number(env.BENCH_TOKENS ?? 20)), deltaMs: Math.max(0, Number(env.BENCH_DELTA_MS ?? 1)) };
}

/** A stream as three parts: what opens it (with the first delta), one delta, and what closes it. */
interface StreamParts {
  readonly head: Buffer;
  readonly delta: Buffer;
  readonly tail: Buffer;
}

const chatData = (payload: object) => `data: ${JSON.stringify(payload)}\n\n`;
const chatChunk = (delta: object, finish: string | null) =>
  chatData({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1767225600, model: 'bench-model', choices: [{ index: 0, delta, finish_reason: finish }] });

function chatStream(tokens: number, withUsage: boolean): StreamParts {
  const delta = chatChunk({ content: ' tok' }, null);
  const usage = withUsage
    ? chatData({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1767225600, model: 'bench-model', choices: [], usage: { prompt_tokens: 12, completion_tokens: tokens, total_tokens: 12 + tokens } })
    : '';
  return {
    head: Buffer.from(chatChunk({ role: 'assistant', content: '' }, null) + delta),
    delta: Buffer.from(delta),
    tail: Buffer.from(`${chatChunk({}, 'stop')}${usage}data: [DONE]\n\n`),
  };
}

const event = (type: string, payload: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...payload })}\n\n`;

function messagesStream(tokens: number): StreamParts {
  const delta = event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: ' tok' } });
  const start = event('message_start', {
    message: { id: 'msg_bench', type: 'message', role: 'assistant', model: 'bench-model', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 12, output_tokens: 1 } },
  });
  return {
    head: Buffer.from(start + event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) + delta),
    delta: Buffer.from(delta),
    tail: Buffer.from(
      event('content_block_stop', { index: 0 }) +
        event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: tokens } }) +
        event('message_stop', {}),
    ),
  };
}

function responsesStream(tokens: number): StreamParts {
  const item = { id: 'msg_bench', type: 'message', status: 'in_progress', role: 'assistant', content: [] };
  const response = { id: 'resp_bench', object: 'response', created_at: 1767225600, model: 'bench-model', status: 'in_progress', output: [] };
  const text = ' tok'.repeat(tokens);
  const part = { type: 'output_text', text, annotations: [] };
  const done = { ...item, status: 'completed', content: [part] };
  const usage = { input_tokens: 12, input_tokens_details: { cached_tokens: 0 }, output_tokens: tokens, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 12 + tokens };
  const delta = event('response.output_text.delta', { item_id: 'msg_bench', output_index: 0, content_index: 0, delta: ' tok' });
  return {
    head: Buffer.from(
      event('response.created', { response }) +
        event('response.output_item.added', { output_index: 0, item }) +
        event('response.content_part.added', { item_id: 'msg_bench', output_index: 0, content_index: 0, part: { ...part, text: '' } }) +
        delta,
    ),
    delta: Buffer.from(delta),
    tail: Buffer.from(
      event('response.output_text.done', { item_id: 'msg_bench', output_index: 0, content_index: 0, text }) +
        event('response.content_part.done', { item_id: 'msg_bench', output_index: 0, content_index: 0, part }) +
        event('response.output_item.done', { output_index: 0, item: done }) +
        event('response.completed', { response: { ...response, status: 'completed', output: [done], usage } }),
    ),
  };
}

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };

function sendStream(res: ServerResponse, parts: StreamParts, shape: StreamShape): void {
  res.writeHead(200, SSE_HEADERS);
  res.write(parts.head);
  let left = shape.tokens - 1;
  if (shape.deltaMs === 0) {
    for (; left > 0; left--) res.write(parts.delta);
    res.end(parts.tail);
    return;
  }
  const timer = setInterval(() => {
    if (res.destroyed) {
      clearInterval(timer);
    } else if (left > 0) {
      left--;
      res.write(parts.delta);
    } else {
      clearInterval(timer);
      res.end(parts.tail);
    }
  }, shape.deltaMs);
}

export interface BenchUpstream {
  readonly url: string;
  close(): Promise<void>;
}

/** Starts the upstream on a free loopback port. */
export async function startBenchUpstream(shape: StreamShape = streamShapeFromEnv()): Promise<BenchUpstream> {
  const streams = {
    chat: chatStream(shape.tokens, false),
    chatWithUsage: chatStream(shape.tokens, true),
    messages: messagesStream(shape.tokens),
    responses: responsesStream(shape.tokens),
  };
  const reply = (req: IncomingMessage, res: ServerResponse, raw: Buffer) => {
    const isMessages = req.url?.endsWith('/messages') === true;
    const isResponses = req.url?.endsWith('/responses') === true;
    // Only a body that mentions "stream" is parsed, so plain requests cost no JSON work here.
    const body = raw.includes('"stream"') ? (JSON.parse(raw.toString()) as { stream?: unknown; stream_options?: { include_usage?: unknown } }) : null;
    if (body?.stream === true) {
      const parts = isMessages ? streams.messages : isResponses ? streams.responses : body.stream_options?.include_usage === true ? streams.chatWithUsage : streams.chat;
      sendStream(res, parts, shape);
      return;
    }
    const plain = isMessages ? MESSAGES_REPLY : CHAT_REPLY;
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': plain.length });
    res.end(plain);
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => reply(req, res, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
