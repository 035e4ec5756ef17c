/**
 * A provider whose stream never ends: on every protocol's streaming path (chat, Messages, Responses)
 * it sends the opening events, then text deltas for as long as the caller reads, as fast as it
 * reads (the socket's backpressure paces it). For tests and benchmarks of what one long stream
 * costs the gateway. The deltas are one batch of about a MiB, built once and written again and
 * again, so the fake costs next to nothing; their text is long repeated words, which the tokenizer
 * counts quickly, so the gateway's output count does not set the pace.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Text of one delta: 16 KiB of long, repeated words. */
const DELTA_TEXT = `${'tollgate'.repeat(12)} `.repeat(168);
const BATCH_EVENTS = 64;

function frame(event: string | null, data: object): string {
  return `${event === null ? '' : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`;
}

interface Script {
  readonly head: string;
  readonly batch: Buffer;
}

function batchOf(event: () => string): Buffer {
  return Buffer.from(Array.from({ length: BATCH_EVENTS }, event).join(''));
}

const MESSAGES: Script = {
  head:
    frame('message_start', {
      type: 'message_start',
      message: { id: 'msg_endless', type: 'message', role: 'assistant', model: 'claude-endless', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 5, output_tokens: 1 } },
    }) + frame('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
  batch: batchOf(() => frame('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: DELTA_TEXT } })),
};

const chunk = (delta: object) => ({ id: 'chatcmpl-endless', object: 'chat.completion.chunk', created: 1, model: 'gpt-endless', choices: [{ index: 0, delta, finish_reason: null }] });
const CHAT: Script = {
  head: frame(null, chunk({ role: 'assistant', content: '' })),
  batch: batchOf(() => frame(null, chunk({ content: DELTA_TEXT }))),
};

const message = { type: 'message', id: 'msg_endless', status: 'in_progress', role: 'assistant', content: [] };
const response = { id: 'resp_endless', object: 'response', created_at: 1, status: 'in_progress', model: 'gpt-endless', output: [] };
const RESPONSES: Script = {
  head:
    frame('response.created', { type: 'response.created', sequence_number: 0, response }) +
    frame('response.output_item.added', { type: 'response.output_item.added', sequence_number: 1, output_index: 0, item: message }) +
    frame('response.content_part.added', {
      type: 'response.content_part.added',
      sequence_number: 2,
      item_id: 'msg_endless',
      output_index: 0,
      content_index: 0,
      part: { type: 'output_text', text: '', annotations: [] },
    }),
  // The batch repeats, and so do its sequence numbers: the gateway relays a native stream's bytes unread.
  batch: batchOf(() =>
    frame('response.output_text.delta', { type: 'response.output_text.delta', sequence_number: 3, item_id: 'msg_endless', output_index: 0, content_index: 0, delta: DELTA_TEXT, logprobs: [] }),
  ),
};

function scriptFor(path: string): Script {
  if (path.endsWith('/messages')) return MESSAGES;
  if (path.endsWith('/chat/completions')) return CHAT;
  return RESPONSES;
}

export interface EndlessUpstream {
  readonly url: string;
  /** Stops listening and cuts every stream. */
  close(): Promise<void>;
}

export function startEndlessUpstream(): Promise<EndlessUpstream> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const script = scriptFor(req.url ?? '');
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
      res.write(script.head);
      const pump = (): void => {
        while (!res.destroyed) {
          if (!res.write(script.batch)) {
            res.once('drain', pump);
            return;
          }
        }
      };
      pump();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        close: () =>
          new Promise((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      }),
    ),
  );
}
