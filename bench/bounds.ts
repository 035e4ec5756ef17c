/**
 * `npm run bench:bounds`: the hostile requests of docs/limits.md, each measured the same way, then a
 * bounded-memory soak. Prints figures and asserts nothing (a benchmark, not a test).
 *
 * The gateway runs in this process (started with --expose-gc), so `monitorEventLoopDelay` sees its
 * event loop; a small fake provider runs here too and costs little. For each probe: the longest
 * event-loop block while it ran, the slowest `GET /healthz` asked every 20 ms meanwhile, heap + buffer
 * growth after a forced GC, and how long the client waited for its answer to end. The soak repeats
 * streams, abandoned streams, slow readers and hostile bodies for BENCH_SOAK_ROUNDS (20) rounds and
 * prints RSS, heap and active handles before and after.
 *
 * Only config keys every version understands are used, so the same script measures an older tree.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import pino from 'pino';
import { issueApiKey } from '../src/auth/issue-key';
import { parseConfig } from '../src/config/load';
import { startGateway, type Gateway } from '../src/gateway';
import { openStore } from '../src/store/open';

const MIB = 1024 * 1024;
const ROUNDS = Number(process.env.BENCH_SOAK_ROUNDS ?? 20);
/** How long a probe's client waits before it gives up (a stream that never ends). */
const CLIENT_TIMEOUT_MS = 10_000;

const gc = (globalThis as { gc?: () => void }).gc;

function memoryMiB(): { heap: number; rss: number } {
  gc?.();
  gc?.();
  const usage = process.memoryUsage();
  return { heap: (usage.heapUsed + usage.arrayBuffers) / MIB, rss: usage.rss / MIB };
}

function sseFrame(event: string | null, data: unknown): string {
  return `${event === null ? '' : `event: ${event}\n`}data: ${JSON.stringify(data)}\n\n`;
}

/** Messages events of a short complete answer. */
function messagesEvents(text: string): string {
  return [
    sseFrame('message_start', { type: 'message_start', message: { id: 'msg_b', type: 'message', role: 'assistant', model: 'claude-bench', content: [], stop_reason: null, usage: { input_tokens: 5, output_tokens: 1 } } }),
    sseFrame('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }),
    sseFrame('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }),
    sseFrame('content_block_stop', { type: 'content_block_stop', index: 0 }),
    sseFrame('message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } }),
    sseFrame('message_stop', { type: 'message_stop' }),
  ].join('');
}

/** The fake provider: the request's `metadata.mode` (or the path) says how to answer. */
function upstreamHandler(req: IncomingMessage, res: ServerResponse): void {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    let body: { metadata?: { mode?: string }; stream?: boolean } = {};
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
    } catch {
      // The gateway only sends JSON; anything else is answered like a plain request.
    }
    const mode = body.metadata?.mode ?? '';
    const sse = { 'content-type': 'text/event-stream' };
    if (mode === 'one-read') {
      res.writeHead(200, sse);
      res.end(messagesEvents('whole in one read'));
      return;
    }
    if (mode === 'huge-event') {
      res.writeHead(200, sse);
      res.write(sseFrame('message_start', { type: 'message_start', message: { id: 'm', usage: { input_tokens: 5, output_tokens: 1 } } }));
      res.end(sseFrame('content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'y'.repeat(16 * MIB) } }) + messagesEvents('end'));
      return;
    }
    if (mode === 'endless') {
      // A chat stream without usage that never ends: the client decides when it is over.
      res.writeHead(200, sse);
      const chunk = sseFrame(null, { id: 'c', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: 'word '.repeat(2000) } }] }).repeat(6);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      res.on('close', () => res.removeAllListeners('drain'));
      pump();
      return;
    }
    if (req.url?.endsWith('/v1/messages')) {
      if (body.stream === true) {
        res.writeHead(200, sse);
        res.end(messagesEvents('hello'));
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ id: 'msg_b', type: 'message', role: 'assistant', model: 'claude-bench', content: [{ type: 'text', text: 'hello' }], stop_reason: 'end_turn', usage: { input_tokens: 5, output_tokens: 1 } }));
      }
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'c', object: 'chat.completion', model: 'gpt-bench', choices: [{ index: 0, message: { role: 'assistant', content: 'hello' }, finish_reason: 'stop' }], usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 } }));
  });
}

function configText(upstream: string): string {
  return `
version: 1
server: { host: 127.0.0.1, max_body_bytes: 33554432, headers_timeout_ms: 2000, trust_proxy: true }
store: { url: "sqlite::memory:" }
providers:
  bench-anthropic: { protocol: anthropic, base_url: ${upstream}, api_key: bench }
  bench-openai: { protocol: openai, base_url: ${upstream}/v1, api_key: bench }
models:
  claude-bench: { family: anthropic, routes: [{ provider: bench-anthropic }], free: true }
  gpt-bench: { family: openai, routes: [{ provider: bench-openai }], free: true }
plugins:
  auth: { failures_per_minute: 5 }
`;
}

interface Probe {
  readonly maxBlockMs: number;
  readonly slowestHealthzMs: number;
  readonly growthMiB: number;
  readonly answerMs: number;
  readonly note: string;
}

/** Runs `work` while /healthz is asked every 20 ms; the figures every probe reports. */
async function probe(url: string, work: () => Promise<string>): Promise<Probe> {
  const before = memoryMiB().heap;
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  let finished = false;
  let slowest = 0;
  const health = (async () => {
    while (!finished) {
      const startedAt = performance.now();
      await fetch(`${url}/healthz`).then((response) => response.arrayBuffer(), () => undefined);
      slowest = Math.max(slowest, performance.now() - startedAt);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  const startedAt = performance.now();
  const note = await work().catch((error: unknown) => `failed: ${error instanceof Error ? error.message : String(error)}`);
  const answerMs = performance.now() - startedAt;
  finished = true;
  await health;
  histogram.disable();
  return { maxBlockMs: histogram.max / 1e6, slowestHealthzMs: slowest, growthMiB: memoryMiB().heap - before, answerMs, note };
}

async function post(url: string, key: string, body: unknown, signal = AbortSignal.timeout(CLIENT_TIMEOUT_MS)): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify(body),
    signal,
  });
}

/** Reads `bytes` of a streamed answer, then leaves. */
async function readThenLeave(response: Response, bytes: number): Promise<number> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  let read = 0;
  while (read < bytes) {
    const { done, value } = await reader.read();
    if (done) break;
    read += value.length;
  }
  await reader.cancel();
  return read;
}

function slowlorisCloseMs(port: number): Promise<number> {
  const startedAt = performance.now();
  return new Promise((resolve) => {
    // Headers begun, then silence: node only notices at its periodic connection check.
    const socket = connect(port, '127.0.0.1', () => socket.write('POST /v1/messages HTTP/1.1\r\nHost: x\r\nX-Slow: '));
    const give = setTimeout(() => socket.destroy(), 60_000);
    socket.on('error', () => undefined);
    socket.resume();
    socket.on('close', () => {
      clearTimeout(give);
      resolve(performance.now() - startedAt);
    });
  });
}

function row(name: string, p: Probe): void {
  const f = (n: number) => n.toFixed(0).padStart(7);
  console.log(`${name.padEnd(44)} block ${f(p.maxBlockMs)} ms  healthz ${f(p.slowestHealthzMs)} ms  growth ${p.growthMiB.toFixed(1).padStart(6)} MiB  answer ${f(p.answerMs)} ms  ${p.note}`);
}

async function main(): Promise<void> {
  if (gc === undefined) console.log('(run with node --expose-gc for memory figures after a forced GC)');
  // No request timeout on the fake provider: node's would answer 408 on a pooled connection mid-run.
  const upstream = createServer({ requestTimeout: 0 }, upstreamHandler);
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const store = openStore({ url: 'sqlite::memory:' });
  await store.migrate();
  const account = await store.createAccount({ name: 'bench', role: 'user' });
  const { key } = await issueApiKey(store, { accountId: account.id, name: null });
  const gateway: Gateway = await startGateway({ config: parseConfig(configText(upstreamUrl), 'bounds.yaml', {}), port: 0, store, logger: pino({ level: 'silent' }) });
  const { url } = gateway;
  const messages = `${url}/v1/messages`;
  const chat = `${url}/v1/chat/completions`;

  console.log('probe                                        figures');
  row('count_tokens, gpt, 1 MiB of one random word', await probe(url, async () => {
    const word = randomBytes(768 * 1024).toString('base64');
    const response = await post(`${url}/v1/messages/count_tokens`, key, { model: 'gpt-bench', messages: [{ role: 'user', content: word }] }, AbortSignal.timeout(120_000));
    return `status ${response.status} ${(await response.text()).slice(0, 40)}`;
  }));
  row('chat→messages, 40,000 user turns', await probe(url, async () => {
    const turns = Array.from({ length: 40_000 }, (_, i) => ({ role: 'user', content: `turn ${i}` }));
    const response = await post(chat, key, { model: 'claude-bench', max_tokens: 16, messages: turns }, AbortSignal.timeout(300_000));
    await response.arrayBuffer();
    return `status ${response.status}`;
  }));
  row('20,000 missing /console/assets names', await probe(url, async () => {
    for (let batch = 0; batch < 20_000; batch += 100) {
      await Promise.all(Array.from({ length: 100 }, (_, i) => fetch(`${url}/console/assets/miss-${batch + i}-${'x'.repeat(200)}.js`).then((r) => r.arrayBuffer())));
    }
    return '';
  }));
  row('native chat stream, 100 MiB read, client leaves', await probe(url, async () => {
    const response = await post(chat, key, { model: 'gpt-bench', stream: true, messages: [{ role: 'user', content: 'go' }], metadata: { mode: 'endless' } }, AbortSignal.timeout(300_000));
    const read = await readThenLeave(response, 100 * MIB);
    // Let the gateway settle the abandoned stream (the old tap tokenized everything it kept here).
    await new Promise((resolve) => setTimeout(resolve, 2000));
    return `read ${(read / MIB).toFixed(0)} MiB`;
  }));
  row('native messages stream, one 16 MiB event', await probe(url, async () => {
    const response = await post(messages, key, { model: 'claude-bench', max_tokens: 16, stream: true, messages: [{ role: 'user', content: 'go' }], metadata: { mode: 'huge-event' } }, AbortSignal.timeout(300_000));
    const text = await response.text();
    return `status ${response.status}, ${(text.length / MIB).toFixed(0)} MiB${response.status === 200 ? '' : `: ${text.slice(0, 160)}`}`;
  }));
  for (const [name, target, model] of [
    ['native messages', messages, 'claude-bench'],
    ['chat→messages', chat, 'claude-bench'],
  ] as const) {
    row(`stream whole in one read, ${name}`, await probe(url, async () => {
      const response = await post(target, key, { model, max_tokens: 16, stream: true, messages: [{ role: 'user', content: 'go' }], metadata: { mode: 'one-read' } });
      try {
        await response.text();
        return 'ended';
      } catch {
        return `never ended (client gave up after ${CLIENT_TIMEOUT_MS} ms)`;
      }
    }));
  }
  row('slowloris, headers_timeout_ms 2000', await probe(url, async () => `closed after ${(await slowlorisCloseMs(gateway.port)).toFixed(0)} ms`));
  row('50 wrong keys, forged X-Forwarded-For', await probe(url, async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 50; i++) {
      const response = await fetch(chat, { method: 'POST', headers: { authorization: 'Bearer sk-wrong', 'content-type': 'application/json', 'x-forwarded-for': `10.1.${i}.1, 198.51.100.7` }, body: '{}' });
      await response.arrayBuffer();
      statuses.push(response.status);
    }
    return `${statuses.filter((s) => s === 401).length} key lookups allowed (limit 5)`;
  }));

  // The soak: the same mix again and again; what it leaves behind is what leaks.
  const soakRound = async () => {
    const plain = post(messages, key, { model: 'claude-bench', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] }).then((r) => r.arrayBuffer());
    const stream = post(chat, key, { model: 'claude-bench', max_tokens: 16, stream: true, messages: [{ role: 'user', content: 'hi' }] }).then((r) => r.text());
    const oneRead = post(messages, key, { model: 'claude-bench', max_tokens: 16, stream: true, messages: [{ role: 'user', content: 'hi' }], metadata: { mode: 'one-read' } }).then((r) => r.text(), () => '');
    const abandoned = post(chat, key, { model: 'gpt-bench', stream: true, messages: [{ role: 'user', content: 'go' }], metadata: { mode: 'endless' } }).then((r) => readThenLeave(r, 2 * MIB));
    const slowReader = post(chat, key, { model: 'gpt-bench', stream: true, messages: [{ role: 'user', content: 'go' }], metadata: { mode: 'endless' } }).then(async (r) => {
      const reader = r.body!.getReader();
      for (let i = 0; i < 5; i++) {
        await reader.read();
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await reader.cancel();
    });
    const hostile = [
      post(chat, key, { model: 'claude-bench', messages: Array.from({ length: 5000 }, () => ({ role: 'user', content: 'x' })) }).then((r) => r.arrayBuffer()),
      fetch(chat, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{"model": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[' }).then((r) => r.arrayBuffer()),
      fetch(`${url}/console/assets/${randomBytes(16).toString('hex')}.js`).then((r) => r.arrayBuffer()),
    ];
    await Promise.allSettled([plain, stream, oneRead, abandoned, slowReader, ...hostile]);
  };
  await soakRound();
  const handles = () => (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles().length;
  const before = { ...memoryMiB(), handles: handles() };
  const startedAt = performance.now();
  for (let round = 0; round < ROUNDS; round++) await soakRound();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const after = { ...memoryMiB(), handles: handles() };
  console.log(
    `soak: ${ROUNDS} rounds in ${((performance.now() - startedAt) / 1000).toFixed(1)} s; ` +
      `heap+buffers ${before.heap.toFixed(1)} → ${after.heap.toFixed(1)} MiB, RSS ${before.rss.toFixed(0)} → ${after.rss.toFixed(0)} MiB, ` +
      `active handles ${before.handles} → ${after.handles}`,
  );

  await gateway.stop(1000);
  await store.close();
  await new Promise<void>((resolve) => upstream.close(() => resolve()));
  upstream.closeAllConnections();
  process.exit(0);
}

void main();
