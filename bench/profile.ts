/**
 * `npm run bench:profile`: where Tollgate's CPU goes on a plain request. Starts the one-process gateway
 * of `npm run bench` (bench/gateway-main.ts --billed: billing, rate limits, metrics, request log on)
 * under `node --cpu-prof`, warms it up, drives plain chat at 32 connections for a while, stops it, and
 * reads the profile it wrote. Only the samples taken during the measured load count. Prints self time
 * by function (top 40) and by part of the code base (node_modules/<package>, src/<folder>,
 * plugins/<name>, node internals, GC; idle left out), each as a share of busy time and as µs per
 * request. Profiling slows the gateway down; the shares are what to read, the µs are a guide.
 *
 *   BENCH_PROFILE_SECONDS   seconds of measured load (10)
 *   BENCH_WARMUP            seconds of warm-up load before (3)
 *   BENCH_CONNECTIONS       concurrent connections (32; 128 for streams)
 *   BENCH_PROFILE_STREAMS   set (to anything): streamed chat instead of plain, BENCH_TOKENS deltas each
 *   BENCH_PROFILE_MODEL     the model asked for (gpt-bench; claude-bench: a chat client translated to Messages)
 *   BENCH_PROFILE_INTERVAL  sampling interval in µs (250)
 *   BENCH_PROFILE_KEEP      a directory: copy the .cpuprofile there (Chrome DevTools opens it)
 *   BENCH_LOG               where the request log goes (a file in the temporary directory); `silent`: off
 */
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { breakdown, type CpuProfile, type SelfTime } from './cpuprofile';
import { plainRound, streamPool, streamRound, Tally } from './load';
import { cpuMillis, mainThreadCpuMillis, startServerProcess } from './processes';

const SECONDS = Number(process.env.BENCH_PROFILE_SECONDS ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);
const STREAMS = Boolean(process.env.BENCH_PROFILE_STREAMS);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? (STREAMS ? 128 : 32));
const INTERVAL = Number(process.env.BENCH_PROFILE_INTERVAL ?? 250);
const TOP = 40;

/** Now on the monotonic clock V8's profiles use, in µs. */
const monotonicMicros = () => Number(process.hrtime.bigint() / 1000n);

/** Entries as a share of busy time and as that share of `perRequest` µs. */
function table(title: string, entries: readonly SelfTime[], busy: number, perRequest: number): string {
  const lines = entries.map(
    (e) => `${((e.micros / busy) * 100).toFixed(1).padStart(6)}%  ${((e.micros / busy) * perRequest).toFixed(1).padStart(7)} µs  ${e.name}`,
  );
  return `${title}\n  share    per request\n${lines.join('\n')}`;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-profile-'));
  const profileDir = path.join(dir, 'profile');
  process.env.BENCH_LOG = process.env.BENCH_LOG || path.join(dir, 'gateway.log');
  const upstream = await startServerProcess<{ url: string }>('upstream-main.js');
  const gateway = await startServerProcess<{ url: string; key: string }>(
    'gateway-main.js',
    [upstream.info.url, '--billed', `sqlite:${path.join(dir, 'profile.db')}`],
    ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-interval=${INTERVAL}`],
  );
  const target = {
    url: gateway.info.url,
    path: '/v1/chat/completions',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${gateway.info.key}`,
    },
    body: JSON.stringify({
      model: process.env.BENCH_PROFILE_MODEL ?? 'gpt-bench',
      max_tokens: 256,
      messages: [{ role: 'user', content: 'Say hello.' }],
      ...(STREAMS && { stream: true, stream_options: { include_usage: true } }),
    }),
    protocol: 'chat' as const,
  };
  const pool = STREAMS ? streamPool(target, CONNECTIONS) : null;
  const round = (seconds: number, tally: Tally) =>
    pool === null ? plainRound(target, CONNECTIONS, seconds, tally) : streamRound(pool, target, CONNECTIONS, seconds, tally);
  const scenario = STREAMS ? `streamed chat, ${CONNECTIONS} concurrent` : `plain chat, ${CONNECTIONS} connections`;
  const unit = STREAMS ? 'stream' : 'request';
  console.log(
    `Profiling Tollgate (default chain, billing, rate limits, request log ${process.env.BENCH_LOG === 'silent' ? 'off' : 'on'}): ${scenario}, ${SECONDS} s after ${WARMUP} s of warm-up, a sample every ${INTERVAL} µs`,
  );
  await round(WARMUP, new Tally());

  const pid = gateway.child.pid!;
  const tally = new Tally();
  const cpuBefore = cpuMillis(pid);
  const mainBefore = mainThreadCpuMillis(pid);
  const from = monotonicMicros();
  await round(SECONDS, tally);
  const to = monotonicMicros();
  await pool?.close();
  const cpuMicros = (cpuMillis(pid) - cpuBefore) * 1000;
  const mainMicros = (mainThreadCpuMillis(pid) - mainBefore) * 1000;

  // SIGTERM makes gateway-main exit through Node, which writes the profile on the way out.
  const exited = new Promise((resolve) => gateway.child.once('exit', resolve));
  gateway.stop();
  await exited;
  upstream.stop();
  const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
  if (file === undefined) throw new Error(`the gateway wrote no .cpuprofile in ${profileDir}`);
  const profilePath = path.join(profileDir, file);
  if (process.env.BENCH_PROFILE_KEEP) {
    mkdirSync(process.env.BENCH_PROFILE_KEEP, { recursive: true });
    copyFileSync(profilePath, path.join(process.env.BENCH_PROFILE_KEEP, file));
    console.log(`Kept the profile: ${path.join(process.env.BENCH_PROFILE_KEEP, file)}`);
  }
  const result = breakdown(JSON.parse(readFileSync(profilePath, 'utf8')) as CpuProfile, from, to);
  rmSync(dir, { recursive: true, force: true });

  const requests = tally.ok;
  const errors = tally.errorCount === 0 ? 'no errors' : [...tally.errors].map(([kind, n]) => `${n} ${kind}`).join(', ');
  console.log(
    `\n${requests.toLocaleString('en-US')} ${unit}s in ${tally.seconds.toFixed(1)} s (${Math.round(requests / tally.seconds).toLocaleString('en-US')}/s), ${errors}`,
  );
  if (requests === 0) return;
  const mainPerRequest = mainMicros / requests;
  console.log(`Gateway CPU (from /proc): ${(cpuMicros / requests).toFixed(0)} µs per ${unit}, ${mainPerRequest.toFixed(0)} µs of it on the JavaScript thread`);
  const window = result.windowed ? 'the measured load' : 'the whole profile (the load window lay outside it)';
  const busyShare = (result.busyMicros / (result.busyMicros + result.idleMicros)) * 100;
  console.log(`Sampled over ${window}: the JavaScript thread was busy ${busyShare.toFixed(0)}% of the time (idle left out below).`);
  // Samples are taken on wall time, so on a loaded machine a thread waiting for a core still counts
  // as busy: the samples give the shares, the thread's CPU from /proc gives the µs.
  console.log(`Shares are of the sampled busy time; µs per ${unit} are those shares of the ${mainPerRequest.toFixed(0)} µs.\n`);
  console.log(table('Self time by part of the code base:', result.byPart, result.busyMicros, mainPerRequest));
  console.log('');
  console.log(table(`Self time by function (top ${TOP}):`, result.byFunction.slice(0, TOP), result.busyMicros, mainPerRequest));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
