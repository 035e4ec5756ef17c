/**
 * Added latency of one plain chat request through Tollgate versus straight to the upstream, measured
 * in the same run with the two interleaved so machine noise hits both sides alike. Prints figures;
 * asserts nothing.
 */
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { request, Agent } from 'undici';
import { generateApiKey } from '../src/auth/keys';
import { parseConfig } from '../src/config/load';
import { startGateway } from '../src/gateway';
import { openStore } from '../src/store/open';
import { startBenchUpstream } from './fake-upstream';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 200);
const WARMUP = 50;
const BODY = JSON.stringify({ model: 'gpt-bench', messages: [{ role: 'user', content: 'Say hello.' }] });

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

async function timeOne(agent: Agent, url: string, headers: Record<string, string>): Promise<number> {
  const start = performance.now();
  const res = await request(url, { method: 'POST', body: BODY, headers, dispatcher: agent });
  await res.body.arrayBuffer();
  if (res.statusCode !== 200) throw new Error(`unexpected status ${res.statusCode} from ${url}`);
  return performance.now() - start;
}

async function main(): Promise<void> {
  const upstream = await startBenchUpstream();
  const config = parseConfig(
    `
providers:
  bench: { protocol: openai, base_url: "${upstream.url}/v1", api_key: bench-provider-key }
models:
  gpt-bench: { family: openai, routes: [{ provider: bench }], free: true }
store: { url: "sqlite::memory:" }
`,
    'bench.yaml',
    {},
  );
  const store = openStore(config.store);
  await store.migrate();
  const account = await store.createAccount({ name: 'bench', role: 'user' });
  const key = generateApiKey();
  await store.createKey({ accountId: account.id, name: 'bench', hash: key.hash, prefix: key.prefix, last4: key.last4 });
  const gateway = await startGateway({ config, store, port: 0, logger: pino({ level: 'silent' }) });

  const agent = new Agent({ connections: 1 });
  const direct = { url: `${upstream.url}/v1/chat/completions`, headers: { 'content-type': 'application/json' } };
  const through = {
    url: `${gateway.url}/v1/chat/completions`,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key.key}` },
  };
  for (let i = 0; i < WARMUP; i++) {
    await timeOne(agent, direct.url, direct.headers);
    await timeOne(agent, through.url, through.headers);
  }
  const directMs: number[] = [];
  const throughMs: number[] = [];
  for (let i = 0; i < REQUESTS; i++) {
    directMs.push(await timeOne(agent, direct.url, direct.headers));
    throughMs.push(await timeOne(agent, through.url, through.headers));
  }
  directMs.sort((a, b) => a - b);
  throughMs.sort((a, b) => a - b);

  const row = (name: string, values: number[]) =>
    `| ${name} | ${quantile(values, 0.5).toFixed(3)} | ${quantile(values, 0.99).toFixed(3)} |`;
  console.log(`Plain chat, 1 connection, ${REQUESTS} requests each, interleaved (ms)`);
  console.log('| path | p50 | p99 |');
  console.log('|---|---|---|');
  console.log(row('direct to upstream', directMs));
  console.log(row('through Tollgate', throughMs));
  console.log(
    `added latency: p50 ${(quantile(throughMs, 0.5) - quantile(directMs, 0.5)).toFixed(3)} ms, ` +
      `p99 ${(quantile(throughMs, 0.99) - quantile(directMs, 0.99)).toFixed(3)} ms`,
  );

  await agent.close();
  await gateway.stop(1000);
  await store.close();
  await upstream.close();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
