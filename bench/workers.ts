/**
 * Throughput of `tollgate serve` with `server.workers` 1 and 2, as deployed: the real CLI in its own
 * process tree, an SQLite file, in front of the bench upstream, plain chat at 32 connections. Two
 * chains: free models (auth, translate, upstream) and billed (priced models, holds through the store
 * with 2 workers, rate limits counted on every request, in the primary with 2 workers). Also times the
 * cluster IPC round trip one rate-limit decision costs a worker.
 *
 *   npm run build && node dist/bench/workers.js            BENCH_SECONDS (10) per round, BENCH_WORKERS ("1,2")
 *
 * The figures depend on the cores free: the load generator and the upstream share the machine.
 */
import { spawn, fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { PACKAGE_ROOT } from '../src/paths';
import { SqliteStore } from '../src/store/sqlite';
import { plainRound, quantile, Tally, type Target } from './load';
import { startServerProcess } from './processes';

const CLI = path.join(PACKAGE_ROOT, 'bin', 'tollgate.js');
const NEVER_REFUSE = '{ rpm: 1000000000, tpm: 1000000000000, concurrency: 1000000 }';
const CONNECTIONS = 32;

function configText(upstreamUrl: string, workers: number, billed: boolean): string {
  const pricing = billed ? 'price: { input: 3, output: 15 }, max_output_tokens: 4096, context_window: 200000' : 'free: true';
  const plugins = billed ? `plugins:\n  rate-limit: { per_key: ${NEVER_REFUSE}, per_account: ${NEVER_REFUSE} }\n` : '';
  return `version: 1
server: { host: 127.0.0.1, workers: ${workers}, shutdown_unready_ms: 0 }
store: { url: "sqlite:./data/tollgate.db" }
providers:
  bench-openai: { protocol: openai, base_url: "${upstreamUrl}/v1", api_key: bench-provider-key }
models:
  gpt-bench: { family: openai, routes: [{ provider: bench-openai }], ${pricing} }
${plugins}`;
}

interface Served {
  readonly child: ChildProcess;
  readonly url: string;
  readonly key: string;
}

/** Starts `tollgate serve` in `dir` with request logging off; resolves with its address and first-run key. */
function serve(dir: string): Promise<Served> {
  const child = spawn(process.execPath, [CLI, 'serve', '--port', '0'], {
    cwd: dir,
    env: { PATH: process.env.PATH, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`tollgate serve exited with ${code} before listening:\n${out}`)));
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const url = /Console: {2}(http:\/\/[^/\s]+)\/console/.exec(out)?.[1];
      const key = /^\s+(sk-[A-Za-z0-9]{48})$/m.exec(out)?.[1];
      if (url !== undefined && key !== undefined) resolve({ child, url, key });
    });
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

async function round(upstreamUrl: string, workers: number, billed: boolean, seconds: number): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-bench-workers-'));
  writeFileSync(path.join(dir, 'gateway.yaml'), configText(upstreamUrl, workers, billed));
  const served = await serve(dir);
  try {
    if (billed) {
      const store = new SqliteStore(path.join(dir, 'data', 'tollgate.db'));
      await store.migrate();
      const admin = (await store.findAccountByName('admin'))!;
      await store.credit({ accountId: admin.id, amount: 10n ** 18n, kind: 'admin', actor: 'bench', note: 'bench' });
      await store.close();
    }
    const target: Target = {
      url: served.url,
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${served.key}` },
      body: JSON.stringify({ model: 'gpt-bench', max_tokens: 64, messages: [{ role: 'user', content: 'Say hello.' }] }),
      protocol: 'chat',
    };
    await plainRound(target, CONNECTIONS, 2, new Tally());
    const tally = new Tally();
    await plainRound(target, CONNECTIONS, seconds, tally);
    const sorted = [...tally.latency].sort((a, b) => a - b);
    const errors = [...tally.errors].map(([kind, count]) => `${kind} ×${count}`).join(', ') || 'none';
    return `| ${billed ? 'billed' : 'free'} | ${workers} | ${Math.round(tally.ok / tally.seconds)} | ${quantile(sorted, 0.5).toFixed(2)} | ${quantile(sorted, 0.99).toFixed(2)} | ${errors} |`;
  } finally {
    await stop(served.child);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Mean time of one message to a child process and its answer back, as a rate-limit decision takes. */
async function ipcRoundTrip(count: number): Promise<number> {
  const child = fork(__filename, ['--echo'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const decision = { tollgate: 'limit-acquire', id: 0, request: { requestId: 'req_0123456789abcdef', subjects: [{ id: 'key:key_0123', limits: { rpm: 100, tpm: 0, concurrency: 0 } }], tokens: 100 } };
  const ask = () => new Promise<void>((resolve) => {
    child.once('message', () => resolve());
    child.send(decision);
  });
  for (let i = 0; i < 1000; i++) await ask();
  const start = performance.now();
  for (let i = 0; i < count; i++) await ask();
  const mean = ((performance.now() - start) / count) * 1000;
  child.kill();
  return mean;
}

async function main(): Promise<void> {
  if (process.argv[2] === '--echo') {
    process.on('message', (message) => process.send!(message));
    return;
  }
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const workerCounts = (process.env.BENCH_WORKERS ?? '1,2').split(',').map(Number);
  const upstream = await startServerProcess<{ url: string }>('upstream-main.js');
  try {
    console.log(`cluster IPC round trip (one rate-limit decision): ${(await ipcRoundTrip(20000)).toFixed(1)} µs mean\n`);
    console.log(`plain chat, ${CONNECTIONS} connections, ${seconds} s per round\n`);
    console.log('| chain | workers | req/s | p50 ms | p99 ms | errors |');
    console.log('|---|---|---|---|---|---|');
    for (const billed of [false, true]) {
      for (const workers of workerCounts) console.log(await round(upstream.info.url, workers, billed, seconds));
    }
  } finally {
    upstream.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
