/**
 * The longest block of this thread's event loop, in CPU time, which a loaded machine does not stretch,
 * beside the wall-clock one, which it does. A timer ticks every `TICK_MS`; the thread's own CPU time
 * (Linux's /proc/thread-self/schedstat, in ns) between two ticks is at least the longest piece of
 * synchronous work run between them. Linux only.
 */
import { readFileSync } from 'node:fs';

const TICK_MS = 5;

export interface LoopBlocks {
  /** The longest block in this thread's CPU time, in ms. */
  readonly maxCpuMs: number;
  /** The longest block in wall-clock time, in ms (beyond the tick itself). */
  readonly maxWallMs: number;
}

export interface BlockMeter {
  /** What was seen since the start or the last `reset`. */
  read(): LoopBlocks;
  reset(): void;
  stop(): void;
}

/** This thread's CPU time so far, in ms. */
function threadCpuMs(): number {
  return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;
}

export function startBlockMeter(): BlockMeter {
  let lastCpu = threadCpuMs();
  let lastWall = performance.now();
  let maxCpuMs = 0;
  let maxWallMs = 0;
  const timer = setInterval(() => {
    const cpu = threadCpuMs();
    const wall = performance.now();
    maxCpuMs = Math.max(maxCpuMs, cpu - lastCpu);
    maxWallMs = Math.max(maxWallMs, wall - lastWall - TICK_MS);
    lastCpu = cpu;
    lastWall = wall;
  }, TICK_MS);
  timer.unref();
  return {
    read: () => ({ maxCpuMs, maxWallMs }),
    reset: () => {
      maxCpuMs = 0;
      maxWallMs = 0;
    },
    stop: () => clearInterval(timer),
  };
}
