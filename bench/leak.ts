/**
 * `npm run bench:leak`: does the gateway give back what it takes? Sends BENCH_LEAK_REQUESTS (100,000)
 * mixed requests at BENCH_LEAK_CONCURRENCY (32): plain chat and Messages, native and translated
 * streams, and streams the client abandons after the first token. The gateway (default chain,
 * billing and rate limits on, SQLite ledger file) runs in its own process with --expose-gc.
 *
 * After the warm-up (the first 10%) and again at the end, load stops, the gateway is made to collect
 * garbage (SIGUSR2) and its RSS, open file descriptors and in-flight gauge (GET /metrics, when the
 * gateway has one) are read. Prints RSS growth against the 10% target and exits 0 either way.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool, request } from 'undici';
import { oneStream, Tally, type Target } from './load';
import { openFds, rssMiB, startServerProcess } from './processes';

const TOTAL = Number(process.env.BENCH_LEAK_REQUESTS ?? 100_000);
const CONCURRENCY = Number(process.env.BENCH_LEAK_CONCURRENCY ?? 32);
const WARMUP = Math.round(TOTAL / 10);

type Kind = 'plain chat' | 'plain messages' | 'chat stream' | 'messages stream' | 'translated stream' | 'chat stream, client aborts' | 'translated stream, client aborts';

/** The mix, per 20 requests. */
const MIX: ReadonlyArray<readonly [Kind, number]> = [
  ['plain chat', 7],
  ['plain messages', 3],
  ['chat stream', 3],
  ['messages stream', 3],
  ['translated stream', 2],
  ['chat stream, client aborts', 1],
  ['translated stream, client aborts', 1],
];
const SCHEDULE: Kind[] = MIX.flatMap(([kind, n]) => Array<Kind>(n).fill(kind));

function targetsFor(url: string, key: string): Record<Kind, Target> {
  const user = [{ role: 'user', content: 'Say hello.' }];
  const chatHeaders = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
  const messagesHeaders = { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' };
  const chat = (body: object): Target => ({ url, path: '/v1/chat/completions', headers: chatHeaders, body: JSON.stringify(body), protocol: 'chat' });
  const messages = (body: object): Target => ({ url, path: '/v1/messages', headers: messagesHeaders, body: JSON.stringify(body), protocol: 'messages' });
  const chatStream = chat({ model: 'gpt-bench', max_tokens: 256, stream: true, stream_options: { include_usage: true }, messages: user });
  const translated = chat({ model: 'claude-bench', max_tokens: 256, stream: true, stream_options: { include_usage: true }, messages: user });
  return {
    'plain chat': chat({ model: 'gpt-bench', max_tokens: 256, messages: user }),
    'plain messages': messages({ model: 'claude-bench', max_tokens: 256, messages: user }),
    'chat stream': chatStream,
    'messages stream': messages({ model: 'claude-bench', max_tokens: 256, stream: true, messages: user }),
    'translated stream': translated,
    'chat stream, client aborts': chatStream,
    'translated stream, client aborts': translated,
  };
}

async function plain(pool: Pool, target: Target, into: Tally): Promise<void> {
  try {
    const res = await pool.request({ method: 'POST', path: target.path, headers: target.headers, body: target.body });
    await res.body.dump();
    if (res.statusCode === 200) into.ok++;
    else into.fail(`HTTP ${res.statusCode}`);
  } catch (error) {
    into.fail(`error: ${(error as { code?: string }).code ?? (error as Error).message}`);
  }
}

/** Sends requests `from`..`to` of the schedule over `pool`, CONCURRENCY at a time. */
async function drive(pool: Pool, targets: Record<Kind, Target>, tallies: Map<Kind, Tally>, from: number, to: number): Promise<void> {
  let next = from;
  const worker = async () => {
    while (next < to) {
      const kind = SCHEDULE[next++ % SCHEDULE.length];
      const target = targets[kind];
      const tally = tallies.get(kind)!;
      if (kind.startsWith('plain')) await plain(pool, target, tally);
      else await oneStream(pool, target, tally, { abortAfterFirst: kind.endsWith('aborts') });
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

interface Snapshot {
  readonly rss: number;
  readonly fds: number;
  readonly inFlight: number | null;
}

/** Sum of the gateway's in-flight gauge series, or null when it has no /metrics (or will not show it). */
async function inFlight(url: string): Promise<number | null> {
  try {
    const res = await request(`${url}/metrics`);
    const text = await res.body.text();
    if (res.statusCode !== 200) return null;
    const lines = text.split('\n').filter((line) => /^tollgate_(inflight_requests|requests_in_flight)(\{|\s)/.test(line));
    return lines.length === 0 ? null : lines.reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
  } catch {
    return null;
  }
}

/** Lets the gateway go idle, collects garbage twice, then reads it. */
async function snapshot(pid: number, url: string): Promise<Snapshot> {
  await sleep(1000);
  for (let i = 0; i < 2; i++) {
    process.kill(pid, 'SIGUSR2');
    await sleep(500);
  }
  return { rss: rssMiB(pid), fds: openFds(pid), inFlight: await inFlight(url) };
}

async function main(): Promise<void> {
  const upstream = await startServerProcess<{ url: string }>('upstream-main.js');
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-leak-'));
  const gateway = await startServerProcess<{ url: string; key: string }>('gateway-main.js', [upstream.info.url, '--billed', `sqlite:${path.join(dir, 'leak.db')}`], ['--expose-gc']);
  const pid = gateway.child.pid!;
  const targets = targetsFor(gateway.info.url, gateway.info.key);
  const tallies = new Map<Kind, Tally>(MIX.map(([kind]) => [kind, new Tally()]));
  const pool = new Pool(gateway.info.url, { connections: CONCURRENCY, keepAliveTimeout: 30_000 });
  const idle = await snapshot(pid, gateway.info.url);
  console.log(`Leak check: ${TOTAL.toLocaleString('en-US')} requests, ${CONCURRENCY} at a time; gateway pid ${pid}, idle RSS ${idle.rss.toFixed(1)} MiB, ${idle.fds} fds`);

  let rssMax = 0;
  const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssMiB(pid))), 250);
  const started = performance.now();
  await drive(pool, targets, tallies, 0, WARMUP);
  const warm = await snapshot(pid, gateway.info.url);
  console.log(`after warm-up (${WARMUP.toLocaleString('en-US')} requests): RSS ${warm.rss.toFixed(1)} MiB, ${warm.fds} fds, in flight ${warm.inFlight ?? 'n/a'}`);
  const measuredStart = performance.now();
  await drive(pool, targets, tallies, WARMUP, TOTAL);
  const seconds = (performance.now() - measuredStart) / 1000;
  clearInterval(sampler);
  const end = await snapshot(pid, gateway.info.url);
  await pool.close();
  await sleep(1000);
  const closedFds = openFds(pid);
  const elapsed = (performance.now() - started) / 1000;

  console.log(`at the end (${TOTAL.toLocaleString('en-US')} requests): RSS ${end.rss.toFixed(1)} MiB, ${end.fds} fds, in flight ${end.inFlight ?? 'n/a'}`);
  console.log(`after the client closed its connections: ${closedFds} fds (idle before any load: ${idle.fds})`);
  console.log(`\n| kind | requests | errors |\n|---|---:|---|`);
  let errors = 0;
  for (const [kind, tally] of tallies) {
    errors += tally.errorCount;
    const detail = tally.errorCount === 0 ? '0' : [...tally.errors].map(([what, n]) => `${n} ${what}`).join(', ');
    console.log(`| ${kind} | ${tally.ok.toLocaleString('en-US')} | ${detail} |`);
  }
  const growth = ((end.rss - warm.rss) / warm.rss) * 100;
  console.log(`\n${elapsed.toFixed(0)} s in all; ${Math.round((TOTAL - WARMUP) / seconds).toLocaleString('en-US')} requests/s after warm-up; gateway RSS max during load ${rssMax.toFixed(1)} MiB`);
  console.log(`${growth <= 10 ? 'PASS' : 'MISS'}  RSS after GC: ${warm.rss.toFixed(1)} MiB after warm-up → ${end.rss.toFixed(1)} MiB at the end, ${growth >= 0 ? '+' : ''}${growth.toFixed(1)}% (≤ 10%)`);
  if (end.inFlight !== null) {
    console.log(`${end.inFlight === 0 ? 'PASS' : 'MISS'}  in-flight gauge at the end: ${end.inFlight} (0)`);
  } else {
    console.log(`n/a   no in-flight gauge at GET /metrics; open fds after warm-up ${warm.fds}, at the end ${end.fds}, once the client closed ${closedFds}`);
  }
  console.log(`${errors === 0 ? 'PASS' : 'MISS'}  errors: ${errors}`);

  gateway.stop();
  upstream.stop();
  await sleep(200);
  rmSync(dir, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
