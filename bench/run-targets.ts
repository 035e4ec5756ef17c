/**
 * The targets of issue 47 ("the tail and the footprint") as `npm run bench` prints them: PASS/MISS
 * lines with the measured figure, each against the bare proxy measured in the same run, and the
 * memory of both proxies at rest, at one connection and at the 128-stream peak. A target whose
 * scenario did not run (BENCH_ONLY) is left out.
 */
import { check, Figures, int, PLAIN_1, PLAIN_32, signed, STREAMS_1, STREAMS_128, type Measured } from './run-report';
import { BARE, TOLLGATE, type ServedPath } from './run-scenarios';

const PLAIN = 'plain chat';

export function tailTargets(measured: readonly Measured[]): string[] {
  const f = new Figures(measured);
  const lines: string[] = [];
  if (f.result(PLAIN_1, TOLLGATE) && f.result(PLAIN_1, BARE)) {
    const gateway = f.value(PLAIN_1, TOLLGATE, 'latency', 0.99);
    const bare = f.value(PLAIN_1, BARE, 'latency', 0.99);
    const p50 = `p50 ${f.value(PLAIN_1, TOLLGATE, 'latency').toFixed(2)} vs ${f.value(PLAIN_1, BARE, 'latency').toFixed(2)} ms`;
    lines.push(check(gateway <= bare + 0.5, `${PLAIN_1}: p99 Tollgate ${gateway.toFixed(2)} ms, bare proxy ${bare.toFixed(2)} ms: ${signed(gateway - bare)} ms (≤ +0.5); ${p50}`));
  }
  for (const scenario of STREAMS_1) {
    if (!f.result(scenario, TOLLGATE) || !f.result(scenario, BARE)) continue;
    const gateway = f.value(scenario, TOLLGATE, 'ttft');
    const bare = f.value(scenario, BARE, 'ttft');
    lines.push(check(gateway <= bare + 0.25, `${scenario}: TTFT p50 Tollgate ${gateway.toFixed(2)} ms, bare proxy ${bare.toFixed(2)} ms: ${signed(gateway - bare)} ms (≤ +0.25)`));
  }
  const one = f.result(PLAIN_1, TOLLGATE);
  if (one !== undefined) lines.push(check(one.rssMaxMiB <= 130, `RSS at one connection: Tollgate ${one.rssMaxMiB.toFixed(0)} MiB (≤ 130)`));
  const many = f.rssAndErrors(STREAMS_128, TOLLGATE);
  if (many !== undefined) lines.push(check(many.rss <= 160, `RSS peak at ${STREAMS_128} streams: Tollgate ${many.rss.toFixed(0)} MiB (≤ 160)`));
  if (f.result(PLAIN_32, TOLLGATE) && f.result(PLAIN_32, BARE)) {
    const cpu = f.cpu(PLAIN_32, TOLLGATE) / f.cpu(PLAIN_32, BARE);
    lines.push(check(cpu <= 2, `CPU per plain request (32 connections): Tollgate ${int(f.cpu(PLAIN_32, TOLLGATE))} µs = ${cpu.toFixed(2)} × the bare proxy's ${int(f.cpu(PLAIN_32, BARE))} µs (≤ 2)`));
    const ratio = f.rate(PLAIN_32, TOLLGATE) / f.rate(PLAIN_32, BARE);
    lines.push(check(ratio >= 0.5, `${PLAIN_32}: Tollgate ${int(f.rate(PLAIN_32, TOLLGATE))} req/s = ${ratio.toFixed(2)} × the bare proxy's ${int(f.rate(PLAIN_32, BARE))} (≥ 0.50)`));
  }
  const block = f.loopMax(PLAIN, TOLLGATE);
  if (!Number.isNaN(block)) {
    const cpu = (path: string) => f.loopMax(PLAIN, path, 'loopCpuMaxMs').toFixed(1);
    lines.push(
      check(
        block <= 5,
        `longest event-loop block during the plain scenarios: Tollgate ${block.toFixed(1)} ms (${cpu(TOLLGATE)} ms of CPU), bare proxy ${f.loopMax(PLAIN, BARE).toFixed(1)} ms (${cpu(BARE)}) (≤ 5)`,
      ),
    );
  }
  return lines;
}

/** RSS of each proxy at rest (started, no request yet), at one connection and at the 128-stream peak. */
export function footprintLines(measured: readonly Measured[], paths: readonly ServedPath[]): string[] {
  const f = new Figures(measured);
  const mib = (value: number | undefined) => (value === undefined || Number.isNaN(value) ? 'n/a' : `${value.toFixed(0)} MiB`);
  return [BARE, TOLLGATE].map((name) => {
    const rest = paths.find((p) => p.name === name)?.restRssMiB;
    return `${name}: ${mib(rest)} at rest, ${mib(f.result(PLAIN_1, name)?.rssMaxMiB)} at one connection, ${mib(f.rssAndErrors(STREAMS_128, name)?.rss)} peak at ${STREAMS_128} streams`;
  });
}
