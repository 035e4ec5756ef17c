/**
 * How much room the "≤ 2 × the bare proxy's CPU" target leaves a gateway that bills: plain chat at 32
 * connections through the bare proxy, the paying floor (bench/paying-floor-main.ts: the bare proxy plus
 * only the work billing cannot skip, done the cheapest way) and Tollgate with its default paying chain,
 * the paths taking turns in rounds so machine noise hits them alike. Prints CPU per request and
 * requests/s of each, and their ratios to the bare proxy; asserts nothing. Two more rows leave the
 * ledger row, then the log line too, out of the paying floor, to show what each costs.
 *
 * First, the ledger row and the log line alone (bench/floor-rows-main.ts, its own process): each the
 * cheapest way there is beside Tollgate's own, in CPU µs per row and per line, so the table shows what
 * Tollgate's ledger writer and request line cost above the work itself.
 *
 *   npm run bench:floor        BENCH_ROUNDS (6) rounds of BENCH_ROUND (3) s each, after 3 s of warm-up; BENCH_CONNECTIONS (32)
 *   BENCH_FLOOR=rows | http    only the per-row table, or only the requests' table
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { plainRound, quantile, Tally, type Target } from './load';
import { cpuMillis, startServerProcess, type ServerProcess } from './processes';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const ROUND_SECONDS = Number(process.env.BENCH_ROUND ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const BODY = JSON.stringify({
  model: 'gpt-bench',
  max_tokens: 256,
  messages: [{ role: 'user', content: 'Say hello.' }],
});

interface Path {
  readonly name: string;
  readonly server: ServerProcess<{ url: string; key?: string }>;
  readonly target: Target;
  readonly tally: Tally;
  cpuMs: number;
}

function pathOf(name: string, server: ServerProcess<{ url: string; key?: string }>): Path {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
  };
  if (server.info.key !== undefined) headers.authorization = `Bearer ${server.info.key}`;
  return {
    name,
    server,
    target: {
      url: server.info.url,
      path: '/v1/chat/completions',
      headers,
      body: BODY,
      protocol: 'chat',
    },
    tally: new Tally(),
    cpuMs: 0,
  };
}

/** The per-row table, from its own process so the servers' JIT and heap stay out of it. */
function rowsTable(): void {
  const run = spawnSync(process.execPath, [path.join(__dirname, 'floor-rows-main.js')], { stdio: 'inherit' });
  if (run.status !== 0) throw new Error(`floor-rows-main.js exited with ${run.status ?? run.signal}`);
  console.log('');
}

async function main(): Promise<void> {
  const parts = process.env.BENCH_FLOOR ?? 'rows,http';
  if (parts.includes('rows')) rowsTable();
  if (!parts.includes('http')) return;
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-floor-'));
  const upstream = await startServerProcess<{ url: string }>('upstream-main.js');
  // Each server inherits BENCH_LOG as it is when it starts: both log lines go to files, as in production.
  process.env.BENCH_LOG = path.join(dir, 'floor.log');
  const paths = [
    pathOf('bare Node proxy', await startServerProcess('bare-proxy-main.js', [upstream.info.url])),
    pathOf('paying floor', await startServerProcess('paying-floor-main.js', [upstream.info.url, path.join(dir, 'floor.db')])),
    pathOf(
      'paying floor without the ledger row',
      await startServerProcess('paying-floor-main.js', [upstream.info.url, path.join(dir, 'floor2.db'), '--without=ledger']),
    ),
    pathOf(
      'paying floor without ledger row and log line',
      await startServerProcess('paying-floor-main.js', [upstream.info.url, path.join(dir, 'floor3.db'), '--without=ledger,log']),
    ),
  ];
  process.env.BENCH_LOG = path.join(dir, 'tollgate.log');
  paths.push(pathOf('Tollgate', await startServerProcess('gateway-main.js', [upstream.info.url, '--billed', `sqlite:${path.join(dir, 'tollgate.db')}`])));
  try {
    for (const p of paths) await plainRound(p.target, CONNECTIONS, 3, new Tally());
    for (let round = 0; round < ROUNDS; round++) {
      // Each round starts with the next path, so a slow moment of the machine does not always hit the same one.
      for (let i = 0; i < paths.length; i++) {
        const p = paths[(round + i) % paths.length];
        const before = cpuMillis(p.server.child.pid!);
        await plainRound(p.target, CONNECTIONS, ROUND_SECONDS, p.tally);
        p.cpuMs += cpuMillis(p.server.child.pid!) - before;
      }
    }
    const floor = paths[0];
    const cpuPerRequest = (p: Path) => (p.cpuMs * 1000) / p.tally.ok;
    console.log(`plain chat, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${ROUND_SECONDS} s per path, taking turns\n`);
    console.log('| path | req/s | CPU µs/req | × bare proxy CPU | p50 ms | errors |');
    console.log('|---|---:|---:|---:|---:|---:|');
    for (const p of paths) {
      const latency = [...p.tally.latency].sort((a, b) => a - b);
      const ratio = (cpuPerRequest(p) / cpuPerRequest(floor)).toFixed(2);
      console.log(
        `| ${p.name} | ${Math.round(p.tally.ok / p.tally.seconds).toLocaleString('en-US')} | ${Math.round(cpuPerRequest(p))} | ${ratio} | ${quantile(latency, 0.5).toFixed(2)} | ${p.tally.errorCount} |`,
      );
    }
  } finally {
    for (const p of paths) p.server.stop();
    upstream.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
