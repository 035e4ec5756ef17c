/**
 * What failover and an open breaker cost, in-process on loopback. Prints figures; asserts nothing.
 * - one failover: a model whose first route refuses the connection (a closed port) and whose second
 *   answers, against the same model routed straight to the answering upstream (breakers off, so
 *   every request pays the failed attempt);
 * - fail fast: a model whose only provider's breaker is open, answered 503 without an attempt.
 *
 *   npm run build && node dist/bench/failover.js            (ROUNDS=… to change the sample count)
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { parseConfig } from '../src/config/load';
import { startGateway } from '../src/gateway';
import { issueApiKey } from '../src/auth/issue-key';
import { startBenchUpstream } from './fake-upstream';

const ROUNDS = Number(process.env.ROUNDS ?? 1000);

function yaml(upstream: string, failing: string, breakerEnabled: boolean): string {
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "sqlite::memory:" }
providers:
  refused: { protocol: anthropic, base_url: "http://127.0.0.1:1", api_key: k }
  up: { protocol: anthropic, base_url: "${upstream}", api_key: k }
  failing: { protocol: anthropic, base_url: "${failing}", api_key: k }
models:
  direct: { family: anthropic, routes: [{ provider: up }], free: true }
  failover: { family: anthropic, routes: [{ provider: refused, priority: 0 }, { provider: up, priority: 1 }], free: true }
  broken: { family: anthropic, routes: [{ provider: failing }], free: true }
plugins:
  upstream:
    failover: { backoff_base_ms: 0, backoff_max_ms: 0 }
    breaker: { enabled: ${breakerEnabled}, volume_threshold: 5, reset_timeout_ms: 600000 }
`;
}

async function measure(url: string, key: string, model: string, expectStatus: number): Promise<number[]> {
  const body = JSON.stringify({ model, max_tokens: 10, messages: [{ role: 'user', content: 'Hi' }] });
  const headers = { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };
  const samples: number[] = [];
  for (let i = 0; i < ROUNDS + 200; i++) {
    const start = process.hrtime.bigint();
    const res = await fetch(`${url}/v1/messages`, { method: 'POST', headers, body });
    await res.arrayBuffer();
    if (res.status !== expectStatus) throw new Error(`${model}: expected ${expectStatus}, got ${res.status}`);
    if (i >= 200) samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return samples.sort((a, b) => a - b);
}

const p = (samples: number[], q: number) => samples[Math.min(samples.length - 1, Math.floor(samples.length * q))];

async function main(): Promise<void> {
  const upstream = await startBenchUpstream();
  const failing = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(500, { 'content-type': 'application/json' }).end('{"type":"error","error":{"type":"api_error","message":"down"}}'));
  });
  await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
  const failingUrl = `http://127.0.0.1:${(failing.address() as AddressInfo).port}`;

  const rows: string[] = [];
  for (const breakerEnabled of [false, true]) {
    const gateway = await startGateway({ config: parseConfig(yaml(upstream.url, failingUrl, breakerEnabled), 'bench.yaml', {}), port: 0, logger: pino({ level: 'silent' }) });
    const account = await gateway.store.createAccount({ name: 'bench', role: 'user' });
    const { key } = await issueApiKey(gateway.store, { accountId: account.id, name: null });
    if (!breakerEnabled) {
      const direct = await measure(gateway.url, key, 'direct', 200);
      const failover = await measure(gateway.url, key, 'failover', 200);
      rows.push(`| straight to the answering provider | ${p(direct, 0.5).toFixed(3)} | ${p(direct, 0.99).toFixed(3)} | |`);
      rows.push(`| first route refuses the connection, second answers | ${p(failover, 0.5).toFixed(3)} | ${p(failover, 0.99).toFixed(3)} | +${(p(failover, 0.5) - p(direct, 0.5)).toFixed(3)} ms p50 |`);
    } else {
      // Five failures open the breaker; after that the provider is never called.
      for (let i = 0; i < 5; i++) await fetch(`${gateway.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' }, body: JSON.stringify({ model: 'broken', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }) }).then((res) => res.arrayBuffer());
      const fast = await measure(gateway.url, key, 'broken', 503);
      rows.push(`| breaker open: 503 without an attempt | ${p(fast, 0.5).toFixed(3)} | ${p(fast, 0.99).toFixed(3)} | |`);
    }
    await gateway.stop(100);
  }
  await upstream.close();
  failing.close();

  console.log(`Failover and breaker latency (${ROUNDS} sequential requests each, loopback, Node ${process.version})\n`);
  console.log('| Path | p50 ms | p99 ms | Failover adds |');
  console.log('|---|---:|---:|---|');
  for (const row of rows) console.log(row);
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
