/**
 * `npm run bench`: what Tollgate adds, per scenario, against the same requests sent straight to the
 * fake upstream, in the same run. Upstream, gateway and load generator each run in their own process;
 * the gateway runs the default chain with billing and rate limits on (bench/gateway-main.ts --billed).
 * Direct and gateway alternate in short rounds, so machine noise hits both alike. Prints a table per
 * scenario and the targets as PASS/MISS lines, writes the tables to bench/results.md, and
 * exits 0 either way: figures, never assertions.
 *
 *   BENCH_DURATION   seconds per scenario, both paths together (12)
 *   BENCH_ROUND      seconds per round of one path (1)
 *   BENCH_WARMUP     seconds of warm-up traffic per endpoint before measuring (2)
 *   BENCH_TOKENS     content deltas per stream (20); BENCH_DELTA_MS pause between them (1)
 *   BENCH_ONLY       run only the scenarios whose name contains this text (targets of the others are skipped)
 *   BENCH_STORE      the gateway's store URL (a SQLite file in a temporary directory by default)
 *   BENCH_PROFILE    a directory: write a CPU profile of the gateway there
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import type { Pool } from 'undici';
import { streamShapeFromEnv } from './fake-upstream';
import { plainRound, quantile, streamPool, streamRound, Tally, type Target } from './load';
import { cpuMillis, rssMiB, startServerProcess } from './processes';

const DURATION = Number(process.env.BENCH_DURATION ?? 12);
const ROUND = Number(process.env.BENCH_ROUND ?? 1);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const SHAPE = streamShapeFromEnv();

interface Scenario {
  readonly name: string;
  readonly stream: boolean;
  readonly connections: number;
  readonly direct: Target;
  readonly gateway: Target;
}

interface Measured {
  readonly scenario: Scenario;
  readonly direct: Tally;
  readonly gateway: Tally;
  /** Upstream CPU during the direct rounds, gateway CPU during the gateway rounds, in ms. */
  readonly upstreamCpuMs: number;
  readonly gatewayCpuMs: number;
  readonly gatewayRssMaxMiB: number;
}

const USER = [{ role: 'user', content: 'Say hello.' }];
const json = { 'content-type': 'application/json' };

function scenarios(upstream: string, gateway: string, key: string): Scenario[] {
  const chatGateway = { ...json, authorization: `Bearer ${key}` };
  const messagesGateway = { ...json, 'x-api-key': key, 'anthropic-version': '2023-06-01' };
  const plainChat = JSON.stringify({ model: 'gpt-bench', max_tokens: 256, messages: USER });
  const chatStream = JSON.stringify({ model: 'gpt-bench', max_tokens: 256, stream: true, stream_options: { include_usage: true }, messages: USER });
  const messagesStream = JSON.stringify({ model: 'claude-bench', max_tokens: 256, stream: true, messages: USER });
  const translated = JSON.stringify({ model: 'claude-bench', max_tokens: 256, stream: true, stream_options: { include_usage: true }, messages: USER });
  const chat = (url: string, headers: Record<string, string>, body: string): Target => ({ url, path: '/v1/chat/completions', headers, body, protocol: 'chat' });
  const messages = (url: string, headers: Record<string, string>, body: string): Target => ({ url, path: '/v1/messages', headers, body, protocol: 'messages' });
  const list: Scenario[] = [];
  for (const connections of [1, 32, 128]) {
    list.push({ name: `plain chat, ${connections} connection${connections > 1 ? 's' : ''}`, stream: false, connections, direct: chat(upstream, json, plainChat), gateway: chat(gateway, chatGateway, plainChat) });
  }
  for (const connections of [1, 128]) {
    const n = `${connections} concurrent`;
    list.push({ name: `streamed chat, ${n}`, stream: true, connections, direct: chat(upstream, json, chatStream), gateway: chat(gateway, chatGateway, chatStream) });
    list.push({ name: `streamed messages, ${n}`, stream: true, connections, direct: messages(upstream, messagesGateway, messagesStream), gateway: messages(gateway, messagesGateway, messagesStream) });
    // Direct is the Messages stream the gateway itself asks the upstream for; the client gets chat chunks.
    list.push({ name: `translated stream (chat client, claude model), ${n}`, stream: true, connections, direct: messages(upstream, messagesGateway, messagesStream), gateway: chat(gateway, chatGateway, translated) });
  }
  return list;
}

/** Runs one round of one path; streams reuse the scenario's pool for that path. */
function round(scenario: Scenario, target: Target, pool: Pool | null, into: Tally): Promise<void> {
  return pool === null ? plainRound(target, scenario.connections, ROUND, into) : streamRound(pool, target, scenario.connections, ROUND, into);
}

async function measure(scenario: Scenario, upstreamPid: number, gatewayPid: number): Promise<Measured> {
  const direct = new Tally();
  const gateway = new Tally();
  const pools = scenario.stream ? { direct: streamPool(scenario.direct, scenario.connections), gateway: streamPool(scenario.gateway, scenario.connections) } : null;
  let upstreamCpuMs = 0;
  let gatewayCpuMs = 0;
  let rssMax = rssMiB(gatewayPid);
  const rounds = Math.max(1, Math.round(DURATION / (2 * ROUND)));
  for (let r = 0; r < rounds; r++) {
    for (const side of r % 2 === 0 ? (['direct', 'gateway'] as const) : (['gateway', 'direct'] as const)) {
      if (side === 'direct') {
        const before = cpuMillis(upstreamPid);
        await round(scenario, scenario.direct, pools?.direct ?? null, direct);
        upstreamCpuMs += cpuMillis(upstreamPid) - before;
      } else {
        const before = cpuMillis(gatewayPid);
        const sampler = setInterval(() => (rssMax = Math.max(rssMax, rssMiB(gatewayPid))), 100);
        await round(scenario, scenario.gateway, pools?.gateway ?? null, gateway);
        clearInterval(sampler);
        rssMax = Math.max(rssMax, rssMiB(gatewayPid));
        gatewayCpuMs += cpuMillis(gatewayPid) - before;
      }
    }
  }
  await Promise.all([pools?.direct.close(), pools?.gateway.close()]);
  direct.latency.sort((a, b) => a - b);
  direct.ttft.sort((a, b) => a - b);
  gateway.latency.sort((a, b) => a - b);
  gateway.ttft.sort((a, b) => a - b);
  return { scenario, direct, gateway, upstreamCpuMs, gatewayCpuMs, gatewayRssMaxMiB: rssMax };
}

const rate = (t: Tally) => t.ok / t.seconds;
const p50 = (values: readonly number[]) => quantile(values, 0.5);
const p99 = (values: readonly number[]) => quantile(values, 0.99);
const ms = (value: number) => (Number.isNaN(value) ? '' : value.toFixed(2));
const added = (value: number) => (Number.isNaN(value) ? '' : ` (${value >= 0 ? '+' : ''}${value.toFixed(2)})`);
const int = (value: number) => Math.round(value).toLocaleString('en-US');
const errorText = (t: Tally) => (t.errorCount === 0 ? '0' : [...t.errors].map(([kind, n]) => `${n} ${kind}`).join(', '));
/** Server CPU per request in µs: the upstream's on direct rows, the gateway's on Tollgate rows. */
const cpuPerRequest = (cpuMs: number, t: Tally) => (t.ok === 0 ? '' : int((cpuMs / t.ok) * 1000));

const HEADER = '| path | req/s | p50 ms | p99 ms | TTFT p50 ms | TTFT p99 ms | CPU µs/req | gateway RSS max | errors |';
const RULE = '|---|---:|---:|---:|---:|---:|---:|---:|---|';

function rows(m: Measured, withScenario: boolean): string[] {
  const { direct, gateway } = m;
  const lead = withScenario ? `| ${m.scenario.name} ` : '';
  const share = rate(direct) > 0 ? ` (${((rate(gateway) / rate(direct)) * 100).toFixed(0)}%)` : '';
  return [
    `${lead}| direct | ${int(rate(direct))} | ${ms(p50(direct.latency))} | ${ms(p99(direct.latency))} | ${ms(p50(direct.ttft))} | ${ms(p99(direct.ttft))} | ${cpuPerRequest(m.upstreamCpuMs, direct)} | | ${errorText(direct)} |`,
    `${lead}| Tollgate | ${int(rate(gateway))}${share} | ${ms(p50(gateway.latency))}${added(p50(gateway.latency) - p50(direct.latency))} | ${ms(p99(gateway.latency))}${added(p99(gateway.latency) - p99(direct.latency))} | ${ms(p50(gateway.ttft))}${added(p50(gateway.ttft) - p50(direct.ttft))} | ${ms(p99(gateway.ttft))}${added(p99(gateway.ttft) - p99(direct.ttft))} | ${cpuPerRequest(m.gatewayCpuMs, gateway)} | ${m.gatewayRssMaxMiB.toFixed(0)} MiB | ${errorText(gateway)} |`,
  ];
}

function targets(results: readonly Measured[]): string[] {
  const find = (name: string) => results.find((m) => m.scenario.name === name)!;
  const check = (ok: boolean, text: string) => `${ok ? 'PASS' : 'MISS'}  ${text}`;
  const plain1 = find('plain chat, 1 connection');
  const add50 = p50(plain1.gateway.latency) - p50(plain1.direct.latency);
  const add99 = p99(plain1.gateway.latency) - p99(plain1.direct.latency);
  const stream1 = find('streamed chat, 1 concurrent');
  const ttft = p50(stream1.gateway.ttft) - p50(stream1.direct.ttft);
  const plain32 = find('plain chat, 32 connections');
  const share = rate(plain32.gateway) / rate(plain32.direct);
  const many = results.filter((m) => m.scenario.stream && m.scenario.connections === 128);
  const rss = Math.max(...many.map((m) => m.gatewayRssMaxMiB));
  const errors = many.reduce((sum, m) => sum + m.gateway.errorCount, 0);
  const cpu = (m: Measured) => m.gatewayCpuMs / m.gateway.ok;
  const native = find('streamed messages, 128 concurrent');
  const nativeChat = find('streamed chat, 128 concurrent');
  const translated = find('translated stream (chat client, claude model), 128 concurrent');
  const extra = cpu(translated) / cpu(native) - 1;
  const µs = (value: number) => `${(value * 1000).toFixed(0)} µs`;
  return [
    check(add50 <= 0.5, `plain chat, 1 connection: added latency p50 ${add50.toFixed(3)} ms (≤ 0.5)`),
    check(add99 <= 2, `plain chat, 1 connection: added latency p99 ${add99.toFixed(3)} ms (≤ 2)`),
    check(ttft <= 1, `streamed chat, 1 connection: added time to first token p50 ${ttft.toFixed(3)} ms (≤ 1)`),
    check(share >= 0.5, `plain chat, 32 connections: ${(share * 100).toFixed(1)}% of the direct request rate (≥ 50%): ${int(rate(plain32.gateway))} vs ${int(rate(plain32.direct))} req/s`),
    check(rss <= 150 && errors === 0, `128 concurrent streams: gateway RSS max ${rss.toFixed(0)} MiB (≤ 150), ${errors} errors (0)`),
    check(
      extra <= 0.25,
      `translated streams: gateway CPU ${µs(cpu(translated))}/stream vs native Messages ${µs(cpu(native))} (${extra >= 0 ? '+' : ''}${(extra * 100).toFixed(0)}%, ≤ +25%); native chat ${µs(cpu(nativeChat))}`,
    ),
  ];
}

async function warmUp(list: readonly Scenario[]): Promise<void> {
  // One scenario per gateway endpoint and body, at moderate concurrency, so V8 has optimised the path.
  const seen = new Set<string>();
  for (const scenario of list) {
    const key = scenario.gateway.path + scenario.gateway.body;
    if (seen.has(key)) continue;
    seen.add(key);
    const scratch = new Tally();
    if (scenario.stream) {
      const pool = streamPool(scenario.gateway, 16);
      await streamRound(pool, scenario.gateway, 16, WARMUP, scratch);
      await pool.close();
    } else {
      await plainRound(scenario.gateway, 16, WARMUP, scratch);
    }
    if (scratch.errorCount > 0) console.log(`warm-up ${scenario.name}: ${errorText(scratch)}`);
  }
}

async function main(): Promise<void> {
  const upstream = await startServerProcess<{ url: string }>('upstream-main.js');
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-bench-'));
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  // The ledger in a SQLite file, as a single instance runs: charges are written in batches as in production.
  const store = process.env.BENCH_STORE || `sqlite:${path.join(dir, 'bench.db')}`;
  const gateway = await startServerProcess<{ url: string; key: string }>('gateway-main.js', [upstream.info.url, '--billed', store], profile);
  const list = scenarios(upstream.info.url, gateway.info.url, gateway.info.key).filter((s) => s.name.includes(process.env.BENCH_ONLY ?? ''));
  const machine = `${cpus().length} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'}), Node ${process.version}, loopback; load generator, fake upstream and gateway on the same machine, each in its own process`;
  console.log(`Tollgate benchmark: ${machine}`);
  console.log(`${DURATION} s per scenario in ${ROUND} s rounds, direct and Tollgate alternating; streams of ${SHAPE.tokens} deltas ${SHAPE.deltaMs} ms apart`);
  const stop = () => {
    gateway.stop();
    upstream.stop();
    setTimeout(() => rmSync(dir, { recursive: true, force: true }), 200);
  };
  const ledger = process.env.BENCH_STORE ? store : 'SQLite ledger file';
  console.log(`Gateway: default chain, billing on (priced models, funded account), rate limits on (rpm 10^9 per key and account), ${ledger}\n`);
  const idleRss = rssMiB(gateway.child.pid!);
  await warmUp(list);
  console.log(`Gateway RSS: ${idleRss.toFixed(0)} MiB idle at start, ${rssMiB(gateway.child.pid!).toFixed(0)} MiB after warm-up\n`);

  const results: Measured[] = [];
  for (const scenario of list) {
    const m = await measure(scenario, upstream.child.pid!, gateway.child.pid!);
    results.push(m);
    console.log(`### ${scenario.name}\n${HEADER}\n${RULE}\n${rows(m, false).join('\n')}\n`);
  }
  if (results.length < 9) {
    console.log('Targets and bench/results.md need every scenario: unset BENCH_ONLY.');
    return stop();
  }
  const checks = targets(results);
  console.log(`Targets (issue 8; same-run figures, not assertions):\n${checks.join('\n')}`);

  const markdown = [
    `Measured ${new Date().toISOString().slice(0, 10)}: ${machine}. ${DURATION} s per scenario (direct and Tollgate alternating in ${ROUND} s rounds); streams of ${SHAPE.tokens} content deltas ${SHAPE.deltaMs} ms apart. Tollgate runs the default chain with billing (priced models, ${ledger}) and rate limits (counted, never refusing) on.`,
    '',
    `Gateway RSS ${idleRss.toFixed(0)} MiB idle at start.`,
    '',
    `| scenario ${HEADER}`,
    `|---${RULE}`,
    ...results.flatMap((m) => rows(m, true)),
    '',
    'Tollgate rows give (in brackets) the share of the direct request rate and the latency added to direct. Streams: latency is the whole stream, TTFT the first content delta. CPU is the upstream\'s on direct rows and the gateway\'s on Tollgate rows.',
    '',
    '```',
    ...checks,
    '```',
    '',
  ].join('\n');
  writeFileSync(path.join(__dirname, '..', '..', 'bench', 'results.md'), markdown);
  console.log('\nWrote bench/results.md');
  stop();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
