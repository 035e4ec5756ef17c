/**
 * A deliberately cheap upstream for benchmarks: node:http, canned bodies built once, both protocols,
 * plain and streamed. It must cost far less than the gateway it is used to measure.
 */
import { createServer, type Server } from 'node:http';
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

export interface BenchUpstream {
  readonly url: string;
  close(): Promise<void>;
}

/** Starts the upstream on a free loopback port. */
export async function startBenchUpstream(): Promise<BenchUpstream> {
  const server: Server = createServer((req, res) => {
    // Drain the body; the reply does not depend on it.
    req.resume();
    req.on('end', () => {
      const body = req.url?.endsWith('/messages') ? MESSAGES_REPLY : CHAT_REPLY;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
      res.end(body);
    });
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
