/**
 * How `npm run bench` reports: a table per scenario, the issue's targets as PASS/MISS lines with the
 * measured figure, and a short table fit for the README.
 */
import { quantile, type Tally } from './load';
import type { LoopReading } from './loop-probe';
import { BARE, DIRECT, TOLLGATE, type Scenario, type ServedPath } from './run-scenarios';

/** What one path collected in one scenario. */
export interface PathResult {
  readonly path: ServedPath;
  readonly tally: Tally;
  /** CPU its serving processes used during its rounds, in ms (the upstream's for direct). */
  readonly cpuMs: number;
  /** Largest RSS seen during its rounds (a cluster's: primary and workers together), in MiB. */
  readonly rssMaxMiB: number;
  /** The longest event-loop block during its rounds (wall clock and CPU); null for a path without a loop probe. */
  readonly loop: LoopReading | null;
}

/** One scenario's results, direct first, in the order of the paths. */
export interface Measured {
  readonly scenario: Scenario;
  readonly results: readonly PathResult[];
}

const rate = (t: Tally) => (t.seconds === 0 ? 0 : t.ok / t.seconds);
const p50 = (values: readonly number[]) => quantile(values, 0.5);
const p99 = (values: readonly number[]) => quantile(values, 0.99);
const ms = (value: number) => (Number.isNaN(value) ? '' : value.toFixed(2));
export const signed = (value: number, digits = 2) => `${value >= 0 ? '+' : ''}${value.toFixed(digits)}`;
const added = (value: number) => (Number.isNaN(value) ? '' : ` (${signed(value)})`);
export const int = (value: number) => Math.round(value).toLocaleString('en-US');
const errorText = (t: Tally) => (t.errorCount === 0 ? '0' : [...t.errors].map(([kind, n]) => `${n} ${kind}`).join(', '));
/** CPU of the serving processes per completed request, in µs. */
const cpuPerRequest = (r: PathResult) => (r.tally.ok === 0 ? Number.NaN : (r.cpuMs / r.tally.ok) * 1000);
const µs = (value: number) => (Number.isNaN(value) ? '' : int(value));

export const HEADER = '| path | req/s | p50 ms | p99 ms | TTFT p50 ms | TTFT p99 ms | CPU µs/req | RSS max | loop block max ms (CPU) | errors |';
export const RULE = '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|';

/** A scenario's rows; proxied rows give in brackets their share of the direct rate and what they add to direct. */
export function rows(m: Measured, withScenario: boolean): string[] {
  const lead = withScenario ? `| ${m.scenario.name} ` : '';
  const direct = m.results[0].tally;
  return m.results.map((r, index) => {
    if (r.path.unavailable !== undefined) return `${lead}| ${r.path.name} | not available | | | | | | | | |`;
    const t = r.tally;
    const isDirect = index === 0;
    const share = !isDirect && rate(direct) > 0 ? ` (${((rate(t) / rate(direct)) * 100).toFixed(0)}%)` : '';
    const over = (pick: (values: readonly number[]) => number, values: (t: Tally) => number[]) => (isDirect ? '' : added(pick(values(t)) - pick(values(direct))));
    const latency = (x: Tally) => x.latency;
    const ttft = (x: Tally) => x.ttft;
    return [
      `${lead}| ${r.path.name} | ${int(rate(t))}${share}`,
      `${ms(p50(t.latency))}${over(p50, latency)}`,
      `${ms(p99(t.latency))}${over(p99, latency)}`,
      `${ms(p50(t.ttft))}${over(p50, ttft)}`,
      `${ms(p99(t.ttft))}${over(p99, ttft)}`,
      µs(cpuPerRequest(r)),
      r.path.rss ? `${r.rssMaxMiB.toFixed(0)} MiB` : '',
      r.loop === null ? '' : `${r.loop.loopMaxMs.toFixed(1)} (${r.loop.loopCpuMaxMs.toFixed(1)})`,
      `${errorText(t)} |`,
    ].join(' | ');
  });
}

/** The figures the targets and the README table read, by scenario and path name. */
export class Figures {
  constructor(private readonly measured: readonly Measured[]) {}

  result(scenario: string, path: string): PathResult | undefined {
    const r = this.measured.find((m) => m.scenario.name === scenario)?.results.find((x) => x.path.name === path);
    return r === undefined || r.path.unavailable !== undefined || r.tally.ok === 0 ? undefined : r;
  }

  rate(scenario: string, path: string): number {
    const r = this.result(scenario, path);
    return r === undefined ? Number.NaN : rate(r.tally);
  }

  cpu(scenario: string, path: string): number {
    const r = this.result(scenario, path);
    return r === undefined ? Number.NaN : cpuPerRequest(r);
  }

  /** A quantile of latency or TTFT on `path` minus the same on direct. */
  added(scenario: string, path: string, of: 'latency' | 'ttft', q = 0.5): number {
    const r = this.result(scenario, path);
    const d = this.result(scenario, DIRECT);
    return r === undefined || d === undefined ? Number.NaN : quantile(r.tally[of], q) - quantile(d.tally[of], q);
  }

  value(scenario: string, path: string, of: 'latency' | 'ttft', q = 0.5): number {
    const r = this.result(scenario, path);
    return r === undefined ? Number.NaN : quantile(r.tally[of], q);
  }

  /** The longest event-loop block of `path` (wall clock or CPU) over the scenarios whose name has `text`; NaN without a probe. */
  loopMax(text: string, path: string, of: keyof LoopReading = 'loopMaxMs'): number {
    const found = this.measured.filter((m) => m.scenario.name.includes(text)).map((m) => m.results.find((x) => x.path.name === path)?.loop?.[of] ?? null);
    const values = found.filter((v): v is number => v !== null);
    return values.length === 0 ? Number.NaN : Math.max(...values);
  }

  /** Largest RSS and the errors of `path` over the scenarios whose name has `text`. */
  rssAndErrors(text: string, path: string): { rss: number; errors: number } | undefined {
    const found = this.measured.filter((m) => m.scenario.name.includes(text)).map((m) => m.results.find((x) => x.path.name === path));
    const results = found.filter((r): r is PathResult => r !== undefined && r.path.unavailable === undefined);
    if (results.length === 0) return undefined;
    return { rss: Math.max(...results.map((r) => r.rssMaxMiB)), errors: results.reduce((sum, r) => sum + r.tally.errorCount, 0) };
  }
}

export const check = (ok: boolean, text: string) => `${ok ? 'PASS' : 'MISS'}  ${text}`;
const info = (text: string) => `info  ${text}`;

export const PLAIN_1 = 'plain chat, 1 connection';
export const PLAIN_32 = 'plain chat, 32 connections';
const PLAIN_128 = 'plain chat, 128 connections';
export const STREAMS_1 = ['streamed chat, 1 concurrent', 'streamed messages, 1 concurrent', 'translated stream (chat client, claude model), 1 concurrent'];
export const STREAMS_128 = '128 concurrent';

/**
 * The targets of the issue "close to the Node floor", each against the bare proxy measured in the same
 * run; a target whose scenario did not run (BENCH_ONLY) is left out.
 */
export function floorTargets(measured: readonly Measured[], workersPath: string): string[] {
  const f = new Figures(measured);
  const lines: string[] = [];
  const rateText = (path: string) => `${int(f.rate(PLAIN_32, path))} req/s`;
  if (f.result(PLAIN_32, TOLLGATE) && f.result(PLAIN_32, BARE)) {
    const ratio = f.rate(PLAIN_32, TOLLGATE) / f.rate(PLAIN_32, BARE);
    lines.push(check(ratio >= 0.6, `${PLAIN_32}: Tollgate ${rateText(TOLLGATE)} = ${ratio.toFixed(2)} × the bare proxy's ${rateText(BARE)} (≥ 0.60)`));
    const workers = f.rate(PLAIN_32, workersPath) / f.rate(PLAIN_32, BARE);
    lines.push(info(Number.isNaN(workers) ? `${PLAIN_32}: ${workersPath} not available` : `${PLAIN_32}: ${workersPath} ${rateText(workersPath)} = ${workers.toFixed(2)} × the bare proxy's`));
    const cpu = f.cpu(PLAIN_32, TOLLGATE) / f.cpu(PLAIN_32, BARE);
    const others = [PLAIN_1, PLAIN_128]
      .filter((s) => f.result(s, TOLLGATE) && f.result(s, BARE))
      .map((s) => `${s.replace('plain chat, ', '')}: ${int(f.cpu(s, TOLLGATE))} vs ${int(f.cpu(s, BARE))} µs`);
    lines.push(
      check(
        cpu <= 2,
        `CPU per plain request (32 connections): Tollgate ${int(f.cpu(PLAIN_32, TOLLGATE))} µs = ${cpu.toFixed(2)} × the bare proxy's ${int(f.cpu(PLAIN_32, BARE))} µs (≤ 2)${others.length > 0 ? `; ${others.join(', ')}` : ''}`,
      ),
    );
  }
  if (f.result(PLAIN_1, TOLLGATE) && f.result(PLAIN_1, BARE)) {
    const gateway = f.added(PLAIN_1, TOLLGATE, 'latency');
    const bare = f.added(PLAIN_1, BARE, 'latency');
    lines.push(
      check(gateway <= bare + 0.15, `${PLAIN_1}: added p50 Tollgate ${gateway.toFixed(3)} ms, bare proxy ${bare.toFixed(3)} ms: ${signed(gateway - bare, 3)} ms over the floor (≤ +0.15)`),
    );
  }
  for (const scenario of STREAMS_1) {
    if (!f.result(scenario, TOLLGATE) || !f.result(scenario, BARE)) continue;
    const gateway = f.added(scenario, TOLLGATE, 'ttft');
    const bare = f.added(scenario, BARE, 'ttft');
    lines.push(
      check(gateway <= bare + 0.3, `${scenario}: added TTFT p50 Tollgate ${gateway.toFixed(3)} ms, bare proxy ${bare.toFixed(3)} ms: ${signed(gateway - bare, 3)} ms over the floor (≤ +0.3)`),
    );
  }
  const many = f.rssAndErrors(STREAMS_128, TOLLGATE);
  if (many !== undefined) {
    lines.push(check(many.rss <= 150, `${STREAMS_128} streams: Tollgate RSS max ${many.rss.toFixed(0)} MiB (≤ 150), ${many.errors} errors`));
    const workers = f.rssAndErrors(STREAMS_128, workersPath);
    if (workers !== undefined) lines.push(info(`${STREAMS_128} streams: ${workersPath} RSS max ${workers.rss.toFixed(0)} MiB (primary and workers together), ${workers.errors} errors`));
  }
  return lines;
}

/** The targets of issue 8, against direct; kept so runs stay comparable with earlier ones. */
export function directTargets(measured: readonly Measured[]): string[] {
  const f = new Figures(measured);
  const lines: string[] = [];
  if (f.result(PLAIN_1, TOLLGATE)) {
    const add50 = f.added(PLAIN_1, TOLLGATE, 'latency');
    const add99 = f.added(PLAIN_1, TOLLGATE, 'latency', 0.99);
    lines.push(check(add50 <= 0.5, `${PLAIN_1}: added latency p50 ${add50.toFixed(3)} ms (≤ 0.5)`));
    lines.push(check(add99 <= 2, `${PLAIN_1}: added latency p99 ${add99.toFixed(3)} ms (≤ 2)`));
  }
  if (f.result(STREAMS_1[0], TOLLGATE)) {
    const ttft = f.added(STREAMS_1[0], TOLLGATE, 'ttft');
    lines.push(check(ttft <= 1, `${STREAMS_1[0]}: added time to first token p50 ${ttft.toFixed(3)} ms (≤ 1)`));
  }
  if (f.result(PLAIN_32, TOLLGATE)) {
    const share = f.rate(PLAIN_32, TOLLGATE) / f.rate(PLAIN_32, DIRECT);
    lines.push(check(share >= 0.5, `${PLAIN_32}: ${(share * 100).toFixed(1)}% of the direct request rate (≥ 50%): ${int(f.rate(PLAIN_32, TOLLGATE))} vs ${int(f.rate(PLAIN_32, DIRECT))} req/s`));
  }
  const native = 'streamed messages, 128 concurrent';
  const translated = 'translated stream (chat client, claude model), 128 concurrent';
  if (f.result(native, TOLLGATE) && f.result(translated, TOLLGATE)) {
    const extra = f.cpu(translated, TOLLGATE) / f.cpu(native, TOLLGATE) - 1;
    const nativeChat = f.cpu('streamed chat, 128 concurrent', TOLLGATE);
    lines.push(
      check(
        extra <= 0.25,
        `translated streams: Tollgate CPU ${int(f.cpu(translated, TOLLGATE))} µs/stream vs native Messages ${int(f.cpu(native, TOLLGATE))} µs (${signed(extra * 100, 0)}%, ≤ +25%)${Number.isNaN(nativeChat) ? '' : `; native chat ${int(nativeChat)} µs`}`,
      ),
    );
  }
  return lines;
}

/** A short table for the README: the headline figures of every path side by side. */
export function summaryTable(measured: readonly Measured[], paths: readonly ServedPath[]): string[] {
  const f = new Figures(measured);
  const cell = (value: number, text: (v: number) => string) => (Number.isNaN(value) ? '' : text(value));
  const line = (label: string, value: (path: string) => string) => `| ${label} | ${paths.map((p) => (p.unavailable === undefined ? value(p.name) : 'n/a')).join(' | ')} |`;
  const stream = STREAMS_1[0];
  return [
    `| | ${paths.map((p) => p.name).join(' | ')} |`,
    `|---|${paths.map(() => '---:').join('|')}|`,
    line(`${PLAIN_32}, req/s`, (p) => cell(f.rate(PLAIN_32, p), int)),
    line(`${PLAIN_1}, p50 ms (added)`, (p) => cell(f.value(PLAIN_1, p, 'latency'), (v) => `${v.toFixed(2)}${p === DIRECT ? '' : added(f.added(PLAIN_1, p, 'latency'))}`)),
    line('CPU µs per plain request (32 connections)', (p) => cell(f.cpu(PLAIN_32, p), int)),
    line(`${stream}, TTFT p50 ms (added)`, (p) => cell(f.value(stream, p, 'ttft'), (v) => `${v.toFixed(2)}${p === DIRECT ? '' : added(f.added(stream, p, 'ttft'))}`)),
    line('RSS max, 128 concurrent streams', (p) => (p === DIRECT ? '' : cell(f.rssAndErrors(STREAMS_128, p)?.rss ?? Number.NaN, (v) => `${v.toFixed(0)} MiB`))),
  ];
}
