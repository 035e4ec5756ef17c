/**
 * `npm run bench`: what Tollgate adds, per scenario, against the same requests sent straight to the
 * fake upstream and through a bare Node proxy (the floor: node:http in, undici out, bytes relayed),
 * in the same run. Four paths: direct; the bare proxy (bench/bare-proxy-main.ts); Tollgate in one
 * process, the default chain of a paying deployment with the request log on (bench/gateway-main.ts
 * --billed); and Tollgate with workers, started through `bin/tollgate.js serve` with `server.workers`
 * (bench/cluster-gateway.ts; "not available" when this Tollgate has no such option). Upstream, proxies
 * and load generator each run in their own processes. The paths take turns in short rounds, so
 * machine noise hits all alike. Then the WebSocket scenario on the one-process Tollgate (a 20-turn
 * agent loop over one socket against 20 streamed POSTs, bench/websocket-loop.ts). Prints a table per
 * scenario, the issue's targets as PASS/MISS lines and a README table, writes them to
 * bench/results.md, and exits 0 either way: figures, never assertions.
 *
 *   BENCH_DURATION   seconds per scenario, all paths together (24)
 *   BENCH_ROUND      seconds per round of one path (1)
 *   BENCH_WARMUP     seconds of warm-up traffic per proxy and endpoint before measuring (2)
 *   BENCH_TOKENS     content deltas per stream (20); BENCH_DELTA_MS pause between them (1)
 *   BENCH_ONLY       run only the scenarios whose name contains this text (targets of the others are left out)
 *   BENCH_WORKERS    workers of the cluster row (2); 0 leaves the row out
 *   BENCH_STORE      the one-process gateway's store URL (a SQLite file in a temporary directory by default)
 *   BENCH_LOG        where the one-process gateway writes its request log (a file in the temporary
 *                    directory by default, as the cluster's stdout); `silent`: no request log on either
 *   BENCH_PROFILE    a directory: write a CPU profile of the one-process gateway there
 *   BENCH_WS_LOOPS   20-turn loops per transport and model of the WebSocket scenario (10); 0 leaves it out
 */
import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Pool } from 'undici';
import { startClusterGateway, type ClusterStart } from './cluster-gateway';
import { streamShapeFromEnv } from './fake-upstream';
import { plainRound, streamPool, streamRound, Tally, type Target } from './load';
import { readLoopProbe, rssMiB, startLoopProbe, startServerProcess, totalCpuMillis, totalRssMiB, type LoopReading } from './processes';
import { directTargets, floorTargets, HEADER, rows, RULE, summaryTable, type Measured, type PathResult } from './run-report';
import { footprintLines, tailTargets } from './run-targets';
import { BARE, DIRECT, scenarios, targetOf, TOLLGATE, workersPathName, type Scenario, type ServedPath } from './run-scenarios';
import { loopTable, measureTurnLoops, WEBSOCKET_SCENARIO } from './websocket-loop';

const DURATION = Number(process.env.BENCH_DURATION ?? 24);
const ROUND = Number(process.env.BENCH_ROUND ?? 1);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const WORKERS = Number(process.env.BENCH_WORKERS ?? 2);
const SHAPE = streamShapeFromEnv();
const WS_LOOPS = Number(process.env.BENCH_WS_LOOPS ?? 10);

/** Runs one round of one path; streams reuse the scenario's pool for that path. */
function round(scenario: Scenario, target: Target, pool: Pool | null, into: Tally): Promise<void> {
  return pool === null ? plainRound(target, scenario.connections, ROUND, into) : streamRound(pool, target, scenario.connections, ROUND, into);
}

interface Running {
  readonly path: ServedPath;
  readonly target: Target;
  readonly pool: Pool | null;
  readonly tally: Tally;
  cpuMs: number;
  rssMaxMiB: number;
  loop: LoopReading | null;
}

async function measure(scenario: Scenario, paths: readonly ServedPath[]): Promise<Measured> {
  const running = paths.map((p): Running => {
    const target = targetOf(scenario, p);
    const pool = scenario.stream && p.unavailable === undefined ? streamPool(target, scenario.connections) : null;
    return { path: p, target, pool, tally: new Tally(), cpuMs: 0, rssMaxMiB: p.rss && p.unavailable === undefined ? totalRssMiB(p.pids()) : 0, loop: null };
  });
  const live = running.filter((r) => r.path.unavailable === undefined);
  const rounds = Math.max(1, Math.round(DURATION / (live.length * ROUND)));
  for (let r = 0; r < rounds; r++) {
    // Each round starts with the next path, so no path always follows the same one.
    for (const run of [...live.slice(r % live.length), ...live.slice(0, r % live.length)]) {
      const pids = run.path.pids();
      const before = totalCpuMillis(pids);
      const sample = () => (run.rssMaxMiB = Math.max(run.rssMaxMiB, totalRssMiB(pids)));
      const sampler = run.path.rss ? setInterval(sample, 100) : undefined;
      const probe = run.path.probe;
      if (probe !== undefined) startLoopProbe(probe);
      await round(scenario, run.target, run.pool, run.tally);
      clearInterval(sampler);
      if (run.path.rss) sample();
      run.cpuMs += totalCpuMillis(pids) - before;
      if (probe !== undefined) {
        const reading = await readLoopProbe(probe);
        run.loop = { loopMaxMs: Math.max(run.loop?.loopMaxMs ?? 0, reading.loopMaxMs), loopCpuMaxMs: Math.max(run.loop?.loopCpuMaxMs ?? 0, reading.loopCpuMaxMs) };
      }
    }
  }
  await Promise.all(running.flatMap((r) => (r.pool === null ? [] : [r.pool.close()])));
  const results = running.map(({ path: p, tally, cpuMs, rssMaxMiB, loop }): PathResult => {
    tally.latency.sort((a, b) => a - b);
    tally.ttft.sort((a, b) => a - b);
    return { path: p, tally, cpuMs, rssMaxMiB, loop };
  });
  return { scenario, results };
}

async function warmUp(list: readonly Scenario[], paths: readonly ServedPath[]): Promise<void> {
  // Every proxy, once per endpoint and body, at moderate concurrency, so V8 has optimised the path.
  const seen = new Set<string>();
  for (const p of paths) {
    if (p.name === DIRECT || p.unavailable !== undefined) continue;
    for (const scenario of list) {
      const target = targetOf(scenario, p);
      const key = `${p.name} ${target.path} ${target.body}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const scratch = new Tally();
      if (scenario.stream) {
        const pool = streamPool(target, 16);
        await streamRound(pool, target, 16, WARMUP, scratch);
        await pool.close();
      } else {
        await plainRound(target, 16, WARMUP, scratch);
      }
      if (scratch.errorCount > 0) console.log(`warm-up ${p.name}, ${scenario.name}: ${[...scratch.errors].map(([kind, n]) => `${n} ${kind}`).join(', ')}`);
    }
  }
}

/** Truncates the log files the gateways append to, so a run leaves gigabytes nowhere. */
function truncateLogs(files: readonly string[]): void {
  for (const file of files) {
    try {
      truncateSync(file, 0);
    } catch {
      // Not created (silent log).
    }
  }
}

async function main(): Promise<void> {
  const startedAt = performance.now();
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-bench-'));
  const silent = process.env.BENCH_LOG === 'silent';
  const gatewayLog = process.env.BENCH_LOG || path.join(dir, 'gateway.log');
  // Read by gateway-main.js, which inherits this environment.
  process.env.BENCH_LOG = gatewayLog;
  const upstream = await startServerProcess<{ url: string }>('upstream-main.js');
  const bare = await startServerProcess<{ url: string }>('bare-proxy-main.js', [upstream.info.url]);
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  // The ledger in a SQLite file, as a single instance runs: charges are written in batches as in production.
  const store = process.env.BENCH_STORE || `sqlite:${path.join(dir, 'bench.db')}`;
  const gateway = await startServerProcess<{ url: string; key: string }>('gateway-main.js', [upstream.info.url, '--billed', store], profile);
  const cluster: ClusterStart =
    WORKERS > 0 ? await startClusterGateway({ upstreamUrl: upstream.info.url, dir, workers: WORKERS, logLevel: silent ? 'warn' : 'info' }) : { available: false, reason: 'BENCH_WORKERS=0' };
  const workersName = workersPathName(WORKERS);

  // At rest: started, listening, no request served yet.
  const paths: ServedPath[] = [
    { name: DIRECT, url: upstream.info.url, pids: () => [upstream.child.pid!], rss: false },
    { name: BARE, url: bare.info.url, pids: () => [bare.child.pid!], rss: true, probe: bare.child, restRssMiB: rssMiB(bare.child.pid!) },
    { name: TOLLGATE, url: gateway.info.url, key: gateway.info.key, pids: () => [gateway.child.pid!], rss: true, probe: gateway.child, restRssMiB: rssMiB(gateway.child.pid!) },
  ];
  if (cluster.available) {
    paths.push({ name: workersName, url: cluster.gateway.url, key: cluster.gateway.key, pids: cluster.gateway.pids, rss: true });
  } else if (WORKERS > 0) {
    paths.push({ name: workersName, url: '', pids: () => [], rss: true, unavailable: cluster.reason });
  }
  const logs = [gatewayLog, ...(cluster.available ? [cluster.gateway.logFile] : [])].filter((file) => file.startsWith(dir));
  const stop = async () => {
    gateway.stop();
    bare.stop();
    if (cluster.available) await cluster.gateway.stop();
    upstream.stop();
    setTimeout(() => rmSync(dir, { recursive: true, force: true }), 200);
  };

  const list = scenarios().filter((s) => s.name.includes(process.env.BENCH_ONLY ?? ''));
  const machine = `${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'}), Node ${process.version}, loopback; load generator, fake upstream and each proxy on the same machine, each in its own process`;
  console.log(`Tollgate benchmark: ${machine}`);
  console.log(`${DURATION} s per scenario in ${ROUND} s rounds, the paths taking turns; streams of ${SHAPE.tokens} deltas ${SHAPE.deltaMs} ms apart`);
  const ledger = process.env.BENCH_STORE ? store : 'SQLite ledger file';
  const requestLog = silent ? 'request log off' : 'request log on (JSON lines to a file)';
  const chain = `default chain, billing on (priced models, funded account), rate limits on (rpm 10^9 per key and account), ${requestLog}`;
  console.log(`Tollgate: ${chain}, ${ledger}`);
  console.log(
    cluster.available
      ? `${workersName}: bin/tollgate.js serve with server.workers ${WORKERS}, its own SQLite ledger file; CPU and RSS are primary and workers together`
      : `${workersName}: not available (${cluster.reason})`,
  );
  const idleRss = paths[2].restRssMiB ?? 0;
  await warmUp(list, paths);
  truncateLogs(logs);
  console.log(`Tollgate RSS: ${idleRss.toFixed(0)} MiB idle at start, ${rssMiB(gateway.child.pid!).toFixed(0)} MiB after warm-up\n`);

  const results: Measured[] = [];
  for (const scenario of list) {
    const m = await measure(scenario, paths);
    truncateLogs(logs);
    results.push(m);
    console.log(`### ${scenario.name}\n${HEADER}\n${RULE}\n${rows(m, false).join('\n')}\n`);
  }
  // The WebSocket scenario: the one-process Tollgate only (the socket is a client leg; the upstream legs are the streams above).
  const socketRows =
    WS_LOOPS > 0 && WEBSOCKET_SCENARIO.includes(process.env.BENCH_ONLY ?? '')
      ? loopTable(await measureTurnLoops({ url: gateway.info.url, key: gateway.info.key, pid: gateway.child.pid! }, ['gpt-bench', 'claude-bench'], WS_LOOPS))
      : [];
  if (socketRows.length > 0) console.log(`### ${WEBSOCKET_SCENARIO} (Tollgate, one process)\n${socketRows.join('\n')}\n`);
  const tail = tailTargets(results);
  const footprint = footprintLines(results, paths);
  const floor = floorTargets(results, workersName);
  const earlier = directTargets(results);
  const summary = summaryTable(results, paths);
  console.log(`Memory (RSS):\n${footprint.join('\n')}\n`);
  console.log(`Targets (issue 47, "the tail and the footprint"; same-run figures, not assertions):\n${tail.join('\n')}\n`);
  console.log(`Earlier targets (issue "close to the Node floor"):\n${floor.join('\n')}\n`);
  console.log(`Earlier targets (issue 8, against direct):\n${earlier.join('\n')}\n`);
  console.log(`README table:\n${summary.join('\n')}\n`);
  console.log(`Took ${((performance.now() - startedAt) / 1000).toFixed(0)} s`);
  if (results.length < scenarios().length || socketRows.length === 0) {
    console.log('bench/results.md needs every scenario: unset BENCH_ONLY, and BENCH_WS_LOOPS above 0.');
    return stop();
  }

  const markdown = [
    `Measured ${new Date().toISOString().slice(0, 10)}: ${machine}. ${DURATION} s per scenario (the paths taking turns in ${ROUND} s rounds); streams of ${SHAPE.tokens} content deltas ${SHAPE.deltaMs} ms apart. Tollgate runs the ${chain}, ${ledger}. ${cluster.available ? `${workersName}: \`tollgate serve\` with server.workers ${WORKERS}.` : `${workersName}: not available (${cluster.reason}).`}`,
    '',
    `Tollgate RSS ${idleRss.toFixed(0)} MiB idle at start.`,
    '',
    `| scenario ${HEADER}`,
    `|---${RULE}`,
    ...results.flatMap((m) => rows(m, true)),
    '',
    "Proxied rows give (in brackets) the share of the direct request rate and the latency added to direct. Streams: latency is the whole stream, TTFT the first content delta. CPU per request is the upstream's on direct rows and the serving processes' on the others (a cluster's primary and workers together); RSS likewise. The bare proxy relays the upstream's bytes, so on translated rows it relays the Messages stream Tollgate asks for.",
    '',
    `${WEBSOCKET_SCENARIO}, ${WS_LOOPS} loops per row, the transports taking turns; Tollgate in one process; gpt-bench native, claude-bench translated; each turn's upstream stream as above. CPU per turn is Tollgate's, the socket's handshake included; in brackets the change against HTTP.`,
    '',
    ...socketRows,
    '',
    ...footprint.map((line) => `- ${line}`),
    '',
    '```',
    ...tail,
    '',
    ...floor,
    '',
    ...earlier,
    '```',
    '',
    'README table:',
    '',
    ...summary,
    '',
  ].join('\n');
  writeFileSync(path.join(__dirname, '..', '..', 'bench', 'results.md'), markdown);
  console.log('Wrote bench/results.md');
  await stop();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
