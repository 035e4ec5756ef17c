/**
 * What tracing costs per request: three gateways in this process, identical but for tracing: off
 * (the default: only an incoming trace context is passed on), on with every request sampled
 * (spans exported as OTLP/HTTP JSON to a local sink that discards them), and on with a sample ratio
 * of 0 (context propagated, nothing recorded). They serve the same sequential traffic (plain and
 * streamed Messages requests, billed, against the cheap bench upstream), interleaved request by
 * request so machine noise hits all alike. Prints the median and p99 latency of each, the
 * differences, and the in-process cost of one request's spans alone. Prints figures; asserts nothing.
 *
 *   npm run bench:tracing            (ROUNDS=… to change the sample count)
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { Agent, request } from 'undici';
import { issueApiKey } from '../src/auth/issue-key';
import { unitsToNano } from '../src/billing/money';
import { parseConfig } from '../src/config/load';
import { startGateway, type Gateway } from '../src/gateway';
import type { RequestSummary } from '../src/metrics/summary';
import { ENDPOINTS } from '../src/protocols/types';
import type { Target as RouteTarget } from '../src/routing/resolve';
import { tracesSettings } from '../src/telemetry/settings';
import { exportingTracing } from '../src/telemetry/exporting-tracing';
import { passThroughTracing, type Tracing } from '../src/telemetry/tracing';
import { startBenchUpstream } from './fake-upstream';

const ROUNDS = Number(process.env.ROUNDS ?? 1000);
const WARMUP = 500;

function yaml(upstream: string, telemetry: string): string {
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "sqlite::memory:" }
${telemetry}
providers:
  up: { protocol: anthropic, base_url: "${upstream}", api_key: k }
models:
  claude-bench: { family: anthropic, routes: [{ provider: up }], price: { input: 3, output: 15 } }
`;
}

interface Target {
  readonly name: string;
  readonly gateway: Gateway;
  readonly headers: Record<string, string>;
  readonly plain: number[];
  readonly stream: number[];
}

async function target(name: string, upstream: string, telemetry: string): Promise<Target> {
  const config = parseConfig(yaml(upstream, telemetry), 'bench.yaml', {});
  const gateway = await startGateway({ config, port: 0, logger: pino({ level: 'silent' }), env: {} });
  const account = await gateway.store.createAccount({ name: 'bench', role: 'user' });
  await gateway.store.credit({ accountId: account.id, amount: unitsToNano('1000000'), kind: 'admin', actor: 'bench', note: null });
  const { key } = await issueApiKey(gateway.store, { accountId: account.id, name: null });
  // Every request arrives with a client's trace context, as from an instrumented SDK.
  const headers = {
    'x-api-key': key,
    'anthropic-version': '2023-06-01',
    'content-type': 'application/json',
    traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  };
  return { name, gateway, headers, plain: [], stream: [] };
}

/** An OTLP receiver that reads and discards, counting spans' batches. */
async function startSink(): Promise<{ url: string; batches: () => number; close: () => Promise<void> }> {
  let batches = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      batches += 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    batches: () => batches,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const PLAIN = JSON.stringify({ model: 'claude-bench', max_tokens: 50, messages: [{ role: 'user', content: 'Say hello.' }] });
const STREAM = JSON.stringify({ model: 'claude-bench', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'Say hello.' }] });

async function timeOne(agent: Agent, to: Target, body: string): Promise<number> {
  const start = performance.now();
  const res = await request(`${to.gateway.url}/v1/messages`, { method: 'POST', body, headers: to.headers, dispatcher: agent });
  await res.body.arrayBuffer();
  if (res.statusCode !== 200) throw new Error(`${to.name}: unexpected status ${res.statusCode}`);
  return performance.now() - start;
}

const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

/**
 * One request's spans alone (server span, one attempt, its headers, ending both), in µs, against
 * passing the context through with tracing off. Run in slices that yield to the event loop, so
 * batches are serialised and exported to the sink as in a gateway: the figure includes that work.
 */
async function spanCost(sinkUrl: string, rounds = 20_000): Promise<{ on: number; off: number; dropped: number }> {
  const settings = tracesSettings({ endpoint: sinkUrl, headers: {}, sample_ratio: 1 }, {})!;
  let dropped = 0;
  const tracing = exportingTracing({ ...settings, scheduledDelayMs: 5 }, 'bench', (_reason, count) => (dropped += count));
  const target = { route: { provider: 'up', upstream_model: 'claude-bench', priority: 0, weight: 1 }, provider: { id: 'up', protocol: 'anthropic', base_url: 'http://127.0.0.1:1' } } as unknown as RouteTarget;
  const summary = {
    requestId: 'req_bench', endpoint: 'messages', model: 'claude-bench', stream: false, accountId: 'acc_bench', keyPrefix: 'sk-bench', status: 200,
    errorCode: null, outcome: 'delivered', provider: 'up', providerProtocol: 'anthropic', attempts: 1, attemptLog: [], upstreamRequestId: null,
    clientRequestId: null, tokens: { inputTokens: 12, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 7, imageInputTokens: 0, imageOutputTokens: 0 }, toolCalls: {}, unpricedTools: [],
    usageSource: 'upstream', cost: 141_000n, overage: 0n, unbilled: 0n, rateLimited: null, durationMs: 2, ttfbMs: 1.5, overheadMs: 0.2, settleMs: 0.1,
  } satisfies RequestSummary;
  const headers = { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' };
  const once = (with_: Tracing) => {
    const trace = with_.startRequest(headers, ENDPOINTS.messages, performance.now());
    const attempt = trace.startAttempt(target, 1);
    attempt.committed();
    attempt.ended({ kind: 'delivered' }, { inputTokens: 12, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 7, imageInputTokens: 0, imageOutputTokens: 0, toolCalls: {}, source: 'upstream' }, 200);
    trace.finish({}, summary);
  };
  const timed = async (with_: Tracing) => {
    const slice = 50;
    const start = performance.now();
    for (let done = 0; done < rounds; done += slice) {
      for (let i = 0; i < slice; i++) once(with_);
      await new Promise((resolve) => setImmediate(resolve));
    }
    return ((performance.now() - start) / rounds) * 1000;
  };
  await timed(passThroughTracing);
  const off = await timed(passThroughTracing);
  await timed(tracing);
  const on = await timed(tracing);
  await tracing.shutdown();
  return { on, off, dropped };
}

async function main(): Promise<void> {
  const upstream = await startBenchUpstream({ tokens: 20, deltaMs: 0 });
  const sink = await startSink();
  const off = await target('tracing off', upstream.url, '');
  const on = await target('tracing on', upstream.url, `telemetry: { traces: { endpoint: "${sink.url}", sample_ratio: 1 } }`);
  const unsampled = await target('tracing on, ratio 0', upstream.url, `telemetry: { traces: { endpoint: "${sink.url}", sample_ratio: 0 } }`);
  // The client's traceparent says "sampled": ratio 0 applies to new traces only, so this one sends none.
  unsampled.headers.traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00';
  const agent = new Agent({ connections: 1 });
  const all = [off, on, unsampled];

  for (let i = 0; i < WARMUP + ROUNDS; i++) {
    const order = [...all.slice(i % 3), ...all.slice(0, i % 3)];
    for (const to of order) {
      const plain = await timeOne(agent, to, PLAIN);
      const stream = await timeOne(agent, to, STREAM);
      if (i >= WARMUP) {
        to.plain.push(plain);
        to.stream.push(stream);
      }
    }
  }

  console.log(`Tracing overhead: ${ROUNDS} sequential requests of each kind per gateway, interleaved, in-process, Node ${process.version}\n`);
  console.log('| Request | off p50 / p99 ms | on (all sampled) p50 / p99 ms | on, unsampled p50 / p99 ms | on − off p50 |');
  console.log('|---|---:|---:|---:|---:|');
  for (const kind of ['plain', 'stream'] as const) {
    const [a, b, c] = all.map((to) => [...to[kind]].sort((x, y) => x - y));
    const cell = (s: number[]) => `${quantile(s, 0.5).toFixed(3)} / ${quantile(s, 0.99).toFixed(3)}`;
    const diff = ((quantile(b, 0.5) - quantile(a, 0.5)) * 1000).toFixed(0);
    console.log(`| ${kind === 'plain' ? 'plain Messages, billed' : 'streamed Messages (20 deltas), billed'} | ${cell(a)} | ${cell(b)} | ${cell(c)} | ${diff} µs |`);
  }
  const samples = await (await request(`${on.gateway.url}/metrics`, { dispatcher: agent })).body.text();
  const dropped = samples.split('\n').filter((line) => line.startsWith('tollgate_trace_spans_dropped_total{')).join(', ') || 'none';
  console.log(`\nOTLP batches received by the sink: ${sink.batches()}; spans dropped: ${dropped}`);
  const cost = await spanCost(sink.url);
  console.log(`One request's spans alone (server + one attempt, propagation, attributes, queueing, export): ${cost.on.toFixed(1)} µs on, ${cost.off.toFixed(1)} µs off (context passed through); ${cost.dropped} dropped`);

  await agent.close();
  for (const to of all) await to.gateway.stop(100);
  await sink.close();
  await upstream.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
