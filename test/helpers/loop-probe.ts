/**
 * Preloaded into a gateway child (`node --require …/loop-probe.js`): measures its event loop's longest
 * block in CPU time, which a loaded machine does not stretch, beside the wall-clock one, which it does.
 * A timer ticks every `TICK_MS`; the main thread's own CPU time (Linux's /proc/thread-self/schedstat,
 * in ns) between two ticks is at least the longest piece of synchronous work run between them. On
 * SIGUSR2 the child writes what it saw since the previous SIGUSR2 to `TOLLGATE_LOOP_PROBE_FILE`
 * (`loopProbe` in serve-child.ts reads it) and starts over. Linux only.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';

const TICK_MS = 5;
const file = process.env.TOLLGATE_LOOP_PROBE_FILE;

/** This thread's CPU time so far, in ms. */
function threadCpuMs(): number {
  return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;
}

if (file !== undefined) {
  let seq = 0;
  let lastCpu = threadCpuMs();
  let lastWall = performance.now();
  let maxCpuMs = 0;
  let maxWallMs = 0;
  setInterval(() => {
    const cpu = threadCpuMs();
    const wall = performance.now();
    maxCpuMs = Math.max(maxCpuMs, cpu - lastCpu);
    maxWallMs = Math.max(maxWallMs, wall - lastWall - TICK_MS);
    lastCpu = cpu;
    lastWall = wall;
  }, TICK_MS).unref();
  process.on('SIGUSR2', () => {
    seq += 1;
    // Written whole, then renamed: a reader never sees half of it.
    writeFileSync(`${file}.tmp`, JSON.stringify({ seq, maxCpuMs, maxWallMs }));
    renameSync(`${file}.tmp`, file);
    maxCpuMs = 0;
    maxWallMs = 0;
  });
}
