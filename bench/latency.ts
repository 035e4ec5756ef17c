/**
 * Added latency of one plain chat request through Tollgate versus straight to the upstream and versus
 * a bare Node proxy hop, measured in the same run with the paths interleaved so machine noise hits
 * them alike. Prints figures; asserts nothing.
 */
import { performance } from 'node:perf_hooks';
import { Agent, request } from 'undici';
import { cpuMillis, startServerProcess } from './processes';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 200);
// Enough for V8 to optimise the hot path; fewer leaves the first measured requests running cold code.
const WARMUP = 1000;
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

interface Path {
  readonly name: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly ms: number[];
  /** The proxy process whose CPU time is measured, if any. */
  readonly pid?: number;
  cpuMs?: number;
}

async function main(): Promise<void> {
  // Upstream, proxies and load generator each get a process of their own, as in production.
  const upstream = await startServerProcess<{ url: string }>('upstream-main.js');
  const bare = await startServerProcess<{ url: string }>('bare-proxy-main.js', [upstream.info.url]);
  // BENCH_PROFILE=<dir> writes a CPU profile of the gateway process there.
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const gateway = await startServerProcess<{ url: string; key: string }>('gateway-main.js', [upstream.info.url], profile);

  const json = { 'content-type': 'application/json' };
  const paths: Path[] = [
    { name: 'direct to upstream', url: upstream.info.url, headers: json, ms: [] },
    { name: 'bare Node proxy hop (floor)', url: bare.info.url, headers: json, ms: [], pid: bare.child.pid },
    {
      name: 'through Tollgate',
      url: gateway.info.url,
      headers: { ...json, authorization: `Bearer ${gateway.info.key}` },
      ms: [],
      pid: gateway.child.pid,
    },
  ];
  const agent = new Agent({ connections: 1 });
  for (let i = 0; i < WARMUP + REQUESTS; i++) {
    if (i === WARMUP) for (const path of paths) if (path.pid !== undefined) path.cpuMs = cpuMillis(path.pid);
    for (const path of paths) {
      const ms = await timeOne(agent, `${path.url}/v1/chat/completions`, path.headers);
      if (i >= WARMUP) path.ms.push(ms);
    }
  }
  for (const path of paths) {
    path.ms.sort((a, b) => a - b);
    if (path.pid !== undefined) path.cpuMs = cpuMillis(path.pid) - (path.cpuMs ?? 0);
  }

  const [direct] = paths;
  const p50 = (values: number[]) => quantile(values, 0.5);
  const p99 = (values: number[]) => quantile(values, 0.99);
  console.log(`Plain chat, 1 connection, ${REQUESTS} requests per path, interleaved (ms)`);
  console.log('| path | p50 | p99 | added p50 | added p99 | proxy CPU per request |');
  console.log('|---|---|---|---|---|---|');
  for (const path of paths) {
    const cells = [p50(path.ms), p99(path.ms), p50(path.ms) - p50(direct.ms), p99(path.ms) - p99(direct.ms)];
    const cpu = path.cpuMs === undefined ? '' : `${((path.cpuMs / REQUESTS) * 1000).toFixed(0)} µs`;
    console.log(`| ${path.name} | ${cells.map((value) => value.toFixed(3)).join(' | ')} | ${cpu} |`);
  }

  await agent.close();
  for (const server of [gateway, bare, upstream]) server.stop();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
