/**
 * The floor a gateway is measured against: the least a Node proxy hop can do, with no auth, parsing
 * or routing. node:http in, undici out: it reads the body, forwards it, and relays the answer's bytes.
 * A plain answer is read whole and sent with its length; an event stream is piped to the client chunk
 * by chunk as the upstream sends it, so its time to first token is comparable with a gateway's.
 * Its upstream pool is shaped like Tollgate's (128 connections, keep-alive). Prints `{"url": …}`.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { Pool, type Dispatcher } from 'undici';
import { serveLoopProbe } from './loop-probe';

const pool = new Pool(process.argv[2], { connections: 128, pipelining: 1, keepAliveTimeout: 30_000 });

async function relay(upstream: Dispatcher.ResponseData, res: ServerResponse): Promise<void> {
  const type = String(upstream.headers['content-type'] ?? 'application/json');
  if (type.startsWith('text/event-stream')) {
    res.writeHead(upstream.statusCode, { 'content-type': type, 'cache-control': 'no-cache' });
    // Rejects when the client goes away mid-stream; pipeline has then closed the upstream body.
    return pipeline(upstream.body, res);
  }
  const body = Buffer.from(await upstream.body.arrayBuffer());
  res.writeHead(upstream.statusCode, { 'content-type': type, 'content-length': body.length });
  res.end(body);
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    pool
      .request({ method: 'POST', path: req.url ?? '/', headers: { 'content-type': 'application/json' }, body })
      .then((upstream) => relay(upstream, res))
      .catch(() => res.destroy());
  });
});
server.keepAliveTimeout = 65_000; // Tollgate's default (server.keep_alive_timeout_ms)
serveLoopProbe();
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});
