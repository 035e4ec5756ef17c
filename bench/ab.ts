/**
 * `npm run bench:ab -- <dist-a> <dist-b>`: two builds of Tollgate side by side in one run, for the
 * figure of one change. Each build's bench gateway (bench/gateway-main.ts, `--billed`, its own SQLite ledger file)
 * runs in its own process in front of the same fake upstream; plain chat is sent to each in turn, in
 * short rounds (A, B, B, A, …), so machine noise hits both alike. Per build and concurrency it prints
 * the median over rounds of requests/s, CPU µs per request and p99, the p50 and p99 of all requests,
 * the longest event-loop block (bench/loop-probe.ts; n/a for a build from before the probe) and RSS;
 * then B against A. Figures, not assertions.
 * A dist directory is what `npm run build` leaves (`dist/`), e.g. of a checkout of the commit before.
 *
 *   BENCH_ROUNDS (8) rounds per build and concurrency of BENCH_ROUND (2) s; BENCH_CONNECTIONS (1,32)
 *   BENCH_NODE_ARGS_A, BENCH_NODE_ARGS_B   node options of each build's process (space-separated), e.g. a heap flag
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { plainRound, quantile, Tally, type Target } from './load';
import { cpuMillis, readLoopProbe, rssMiB, startLoopProbe, startServerProcess, type ServerProcess } from './processes';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const ROUND = Number(process.env.BENCH_ROUND ?? 2);
const CONNECTIONS = (process.env.BENCH_CONNECTIONS ?? '1,32').split(',').map(Number);
const BODY = JSON.stringify({ model: 'gpt-bench', max_tokens: 256, messages: [{ role: 'user', content: 'Say hello.' }] });

interface Build {
  readonly name: string;
  readonly server: ServerProcess<{ url: string; key: string }>;
  readonly restRss: number;
  /** Whether its gateway answers the loop probe; found out in the warm-up round. */
  probed: boolean;
}

interface Round {
  readonly rate: number;
  readonly cpuUs: number;
  readonly p99: number;
  readonly loopMs: number;
  readonly loopCpuMs: number;
}

const median = (values: readonly number[]) => quantile([...values].sort((a, b) => a - b), 0.5);
const spread = (values: readonly number[]) => `${Math.min(...values).toFixed(1)}–${Math.max(...values).toFixed(1)}`;
/** A loop figure: NaN is a build without the probe. */
const loopFigure = (values: readonly number[]) =>
  values.some(Number.isNaN) ? 'n/a' : `${median(values).toFixed(1)} (max ${Math.max(...values).toFixed(1)})`;

async function start(name: string, dist: string, upstream: string, dir: string): Promise<Build> {
  const script = path.relative(__dirname, path.join(path.resolve(dist), 'bench', 'gateway-main.js'));
  const nodeArgs = (process.env[`BENCH_NODE_ARGS_${name}`] ?? '').split(' ').filter((arg) => arg !== '');
  const server = await startServerProcess<{ url: string; key: string }>(script, [upstream, '--billed', `sqlite:${path.join(dir, `${name}.db`)}`], nodeArgs);
  return { name, server, restRss: rssMiB(server.child.pid!), probed: true };
}

async function oneRound(build: Build, connections: number, into: Tally): Promise<Round> {
  const pid = build.server.child.pid!;
  const target: Target = { url: build.server.info.url, path: '/v1/chat/completions', headers: { 'content-type': 'application/json', authorization: `Bearer ${build.server.info.key}` }, body: BODY, protocol: 'chat' };
  const round = new Tally();
  const cpu = cpuMillis(pid);
  if (build.probed) startLoopProbe(build.server.child);
  await plainRound(target, connections, ROUND, round);
  // Before the probe's answer, which a build without it makes the bench wait for.
  const cpuMs = cpuMillis(pid) - cpu;
  const loop = build.probed ? await readLoopProbe(build.server.child) : { loopMaxMs: Number.NaN, loopCpuMaxMs: Number.NaN };
  build.probed = !Number.isNaN(loop.loopMaxMs);
  into.ok += round.ok;
  into.seconds += round.seconds;
  into.latency.push(...round.latency);
  for (const [kind, n] of round.errors) into.fail(kind, n);
  round.latency.sort((a, b) => a - b);
  return { rate: round.ok / round.seconds, cpuUs: (cpuMs / round.ok) * 1000, p99: quantile(round.latency, 0.99), loopMs: loop.loopMaxMs, loopCpuMs: loop.loopCpuMaxMs };
}

async function main(distA: string, distB: string): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-ab-'));
  process.env.BENCH_LOG ??= path.join(dir, 'gateway.log');
  const upstream = await startServerProcess<{ url: string }>('upstream-main.js');
  const builds = [await start('A', distA, upstream.info.url, dir), await start('B', distB, upstream.info.url, dir)];
  const args = (name: string) => (process.env[`BENCH_NODE_ARGS_${name}`] ? ` (node ${process.env[`BENCH_NODE_ARGS_${name}`]})` : '');
  console.log(`A: ${distA}${args('A')}\nB: ${distB}${args('B')}\n${ROUNDS} rounds of ${ROUND} s per build and concurrency, alternating A B B A; medians over rounds, range in brackets`);
  console.log(`RSS at rest: A ${builds[0].restRss.toFixed(0)} MiB, B ${builds[1].restRss.toFixed(0)} MiB\n`);
  for (const build of builds) await oneRound(build, 16, new Tally());
  for (const connections of CONNECTIONS) {
    const rounds = new Map<Build, Round[]>(builds.map((b) => [b, []]));
    const tallies = new Map<Build, Tally>(builds.map((b) => [b, new Tally()]));
    for (let r = 0; r < ROUNDS; r++) {
      for (const build of r % 2 === 0 ? builds : [...builds].reverse()) rounds.get(build)!.push(await oneRound(build, connections, tallies.get(build)!));
    }
    console.log(`plain chat, ${connections} connection${connections > 1 ? 's' : ''}`);
    console.log('| build | req/s | CPU µs/req | p99 ms (rounds) | p50 ms | p99 ms | loop block ms | loop CPU ms | RSS MiB | errors |');
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    const medians = builds.map((build) => {
      const list = rounds.get(build)!;
      const tally = tallies.get(build)!;
      tally.latency.sort((a, b) => a - b);
      const m = { rate: median(list.map((x) => x.rate)), cpu: median(list.map((x) => x.cpuUs)), p99: median(list.map((x) => x.p99)) };
      console.log(
        `| ${build.name} | ${m.rate.toFixed(0)} (${spread(list.map((x) => x.rate))}) | ${m.cpu.toFixed(0)} (${spread(list.map((x) => x.cpuUs))}) | ${m.p99.toFixed(2)} | ${quantile(tally.latency, 0.5).toFixed(2)} | ${quantile(tally.latency, 0.99).toFixed(2)} | ${loopFigure(list.map((x) => x.loopMs))} | ${loopFigure(list.map((x) => x.loopCpuMs))} | ${rssMiB(build.server.child.pid!).toFixed(0)} | ${tally.errorCount} |`,
      );
      return m;
    });
    const [a, b] = medians;
    console.log(`B against A: req/s ${((b.rate / a.rate - 1) * 100).toFixed(1)}%, CPU per request ${(b.cpu - a.cpu).toFixed(1)} µs (${((b.cpu / a.cpu - 1) * 100).toFixed(1)}%), p99 ${(b.p99 - a.p99).toFixed(2)} ms\n`);
  }
  for (const build of builds) build.server.stop();
  upstream.stop();
  setTimeout(() => rmSync(dir, { recursive: true, force: true }), 200);
}

const [distA, distB] = process.argv.slice(2);
if (distA === undefined || distB === undefined) {
  console.error('usage: node dist/bench/ab.js <dist-a> <dist-b>');
  process.exit(2);
}
main(distA, distB).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
