/**
 * What the metrics plugin costs per request: two gateways in this process, identical but for
 * `plugins.metrics.enabled`, serve the same sequential traffic (plain and streamed Messages requests,
 * billed, against the cheap bench upstream), interleaved request by request so machine noise hits
 * both alike. Prints the median and p99 latency of each and their difference, what one `record()`
 * of a finished request costs alone, and what one scrape costs. Prints figures; asserts nothing.
 *
 *   npm run bench:metrics            (ROUNDS=… to change the sample count)
 */
import pino from 'pino';
import { Agent, request } from 'undici';
import { issueApiKey } from '../src/auth/issue-key';
import { unitsToNano } from '../src/billing/money';
import { parseConfig } from '../src/config/load';
import { startGateway, type Gateway } from '../src/gateway';
import { GatewayMetrics } from '../src/metrics/metrics';
import type { RequestSummary } from '../src/metrics/summary';
import { startBenchUpstream } from './fake-upstream';

const ROUNDS = Number(process.env.ROUNDS ?? 2000);
// Enough for V8 to optimise both gateways' hot paths before anything is measured.
const WARMUP = 1000;

function yaml(upstream: string, metricsEnabled: boolean): string {
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "sqlite::memory:" }
providers:
  up: { protocol: anthropic, base_url: "${upstream}", api_key: k }
models:
  claude-bench: { family: anthropic, routes: [{ provider: up }], price: { input: 3, output: 15 }, max_output_tokens: 4096, context_window: 200000 }
plugins:
  metrics: { enabled: ${metricsEnabled} }
`;
}

interface Target {
  readonly name: string;
  readonly gateway: Gateway;
  readonly headers: Record<string, string>;
  readonly plain: number[];
  readonly stream: number[];
}

async function target(name: string, upstream: string, metricsEnabled: boolean): Promise<Target> {
  const gateway = await startGateway({ config: parseConfig(yaml(upstream, metricsEnabled), 'bench.yaml', {}), port: 0, logger: pino({ level: 'silent' }) });
  const account = await gateway.store.createAccount({ name: 'bench', role: 'user' });
  await gateway.store.credit({ accountId: account.id, amount: unitsToNano('1000000'), kind: 'admin', actor: 'bench', note: null });
  const { key } = await issueApiKey(gateway.store, { accountId: account.id, name: null });
  const headers = { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };
  return { name, gateway, headers, plain: [], stream: [] };
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

/** The cost of counting one finished request, alone: what the plugin adds after the answer is out. */
function recordCost(): number {
  const metrics = new GatewayMetrics();
  const summary: RequestSummary = {
    requestId: 'req_bench',
    endpoint: 'messages',
    model: 'claude-bench',
    stream: false,
    accountId: 'acc_bench',
    keyPrefix: 'sk-bench',
    status: 200,
    errorCode: null,
    outcome: 'delivered',
    provider: 'up',
    providerProtocol: 'anthropic',
    attempts: 1,
    attemptLog: [{ provider: 'up', outcome: 'ok', durationMs: 1 }],
    upstreamRequestId: 'req_up',
    tokens: { inputTokens: 12, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 7, imageInputTokens: 0, imageOutputTokens: 0 },
    clientRequestId: null,
    toolCalls: {},
    unpricedTools: [],
    overage: 0n,
    unbilled: 0n,
    usageSource: 'upstream',
    cost: 141_000n,
    rateLimited: null,
    durationMs: 2,
    ttfbMs: 1.5,
    overheadMs: 0.5,
    settleMs: 0.1,
  };
  const rounds = 200_000;
  for (let i = 0; i < rounds; i++) metrics.record(summary, { labelAccounts: false });
  const start = performance.now();
  for (let i = 0; i < rounds; i++) metrics.record(summary, { labelAccounts: false });
  return ((performance.now() - start) / rounds) * 1000;
}

async function main(): Promise<void> {
  const upstream = await startBenchUpstream({ tokens: 20, deltaMs: 0 });
  const on = await target('metrics on', upstream.url, true);
  const off = await target('metrics off', upstream.url, false);
  const agent = new Agent({ connections: 1 });

  for (let i = 0; i < WARMUP + ROUNDS; i++) {
    // Alternate which gateway goes first, so neither always runs right after the other.
    for (const to of i % 2 === 0 ? [on, off] : [off, on]) {
      const plain = await timeOne(agent, to, PLAIN);
      const stream = await timeOne(agent, to, STREAM);
      if (i >= WARMUP) {
        to.plain.push(plain);
        to.stream.push(stream);
      }
    }
  }

  const scrapes: number[] = [];
  for (let i = 0; i < 200; i++) {
    const start = performance.now();
    const res = await request(`${on.gateway.url}/metrics`, { dispatcher: agent });
    await res.body.text();
    scrapes.push(performance.now() - start);
  }
  scrapes.sort((a, b) => a - b);

  console.log(`Metrics plugin overhead: ${ROUNDS} sequential requests of each kind per gateway, interleaved, in-process, Node ${process.version}\n`);
  console.log('| Request | metrics off p50 / p99 ms | metrics on p50 / p99 ms | difference p50 / p99 ms |');
  console.log('|---|---:|---:|---:|');
  for (const kind of ['plain', 'stream'] as const) {
    const a = [...off[kind]].sort((x, y) => x - y);
    const b = [...on[kind]].sort((x, y) => x - y);
    const cells = [
      `${quantile(a, 0.5).toFixed(3)} / ${quantile(a, 0.99).toFixed(3)}`,
      `${quantile(b, 0.5).toFixed(3)} / ${quantile(b, 0.99).toFixed(3)}`,
      `${(quantile(b, 0.5) - quantile(a, 0.5)).toFixed(3)} / ${(quantile(b, 0.99) - quantile(a, 0.99)).toFixed(3)}`,
    ];
    console.log(`| ${kind === 'plain' ? 'plain Messages, billed' : 'streamed Messages (20 deltas), billed'} | ${cells.join(' | ')} |`);
  }
  console.log(`\nrecord() of one finished request, alone: ${recordCost().toFixed(2)} µs`);
  console.log(`GET /metrics (scrape, p50 / p99): ${quantile(scrapes, 0.5).toFixed(3)} / ${quantile(scrapes, 0.99).toFixed(3)} ms`);

  await agent.close();
  await on.gateway.stop(100);
  await off.gateway.stop(100);
  await upstream.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
