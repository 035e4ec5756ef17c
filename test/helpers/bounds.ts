/**
 * Measuring the bounds of docs/limits.md in tests: how long the event loop was blocked while a
 * hostile request ran (with a /healthz answered meanwhile), and how much memory stayed after a forced
 * garbage collection. Only generous bounds are asserted: a loaded machine must not fail them.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { startBlockMeter } from './block-meter';

/**
 * The longest event-loop block while `work` ran: `maxBlockMs` in wall-clock time (sampled every 10 ms),
 * which a loaded machine stretches, and `maxCpuMs` in this thread's CPU time, which it does not.
 */
export async function loopBlockDuring<T>(work: () => Promise<T>): Promise<{ result: T; maxBlockMs: number; maxCpuMs: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  const meter = startBlockMeter();
  histogram.enable();
  try {
    const result = await work();
    return { result, maxBlockMs: histogram.max / 1e6, maxCpuMs: meter.read().maxCpuMs };
  } finally {
    histogram.disable();
    meter.stop();
  }
}

/**
 * Asks `GET /healthz` every 20 ms until `done` settles; resolves with the slowest answer's time in ms
 * and how many answered. A gateway whose loop is blocked answers late or not at all.
 */
export async function healthzDuring(url: string, done: Promise<unknown>): Promise<{ slowestMs: number; answered: number }> {
  let finished = false;
  void done.then(
    () => (finished = true),
    () => (finished = true),
  );
  let slowestMs = 0;
  let answered = 0;
  do {
    const startedAt = performance.now();
    const response = await fetch(`${url}/healthz`);
    await response.arrayBuffer();
    if (response.status === 200) answered += 1;
    slowestMs = Math.max(slowestMs, performance.now() - startedAt);
    await new Promise((resolve) => setTimeout(resolve, 20));
  } while (!finished);
  return { slowestMs, answered };
}

let collector: (() => void) | null = null;

/** Forces a full garbage collection (V8's `gc`, exposed for this process without a command-line flag). */
function collectGarbage(): void {
  if (collector === null) {
    setFlagsFromString('--expose-gc');
    collector = runInNewContext('gc') as () => void;
  }
  collector();
  collector();
}

/** Heap and buffer memory in use after a forced collection, in MiB. */
export function memoryAfterGcMiB(): number {
  collectGarbage();
  const { heapUsed, arrayBuffers } = process.memoryUsage();
  return (heapUsed + arrayBuffers) / (1024 * 1024);
}
