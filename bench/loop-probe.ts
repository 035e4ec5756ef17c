/**
 * The longest event-loop block of a bench server process (the bare proxy, the one-process gateway),
 * read by `npm run bench` over the IPC channel it starts them with: `start` before a round, `read`
 * after it. Two samplers run only between the two, so the rounds of the other paths pay nothing for
 * them: perf_hooks' monitorEventLoopDelay at 1 ms (wall clock: what a waiting request sees, stretched
 * when the loaded machine preempts the process), and a 1 ms timer reading the main thread's own CPU
 * time between ticks (Linux's /proc/thread-self/schedstat), which preemption does not stretch. Without
 * an IPC channel (started another way) it does nothing.
 */
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

/** What the bench sends; the process answers `read` with {@link LoopReading}. */
export interface LoopProbeRequest {
  readonly loop: 'start' | 'read';
}

export interface LoopReading {
  /** The longest delay of a 1 ms timer since `start`, in ms: the longest block of the loop. */
  readonly loopMaxMs: number;
  /** The most CPU the main thread used between two ticks of a 1 ms timer since `start`, in ms; NaN off Linux. */
  readonly loopCpuMaxMs: number;
}

/** This thread's CPU time so far, in ms (Linux). */
function threadCpuMs(): number {
  return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;
}

/** The most CPU between two ticks of a 1 ms timer, from `start()` to `stop()`. */
function cpuBetweenTicks(): { start(): void; stop(): number } {
  let timer: NodeJS.Timeout | undefined;
  let max = 0;
  return {
    start() {
      let last = threadCpuMs();
      max = 0;
      timer = setInterval(() => {
        const now = threadCpuMs();
        max = Math.max(max, now - last);
        last = now;
      }, 1);
    },
    stop() {
      clearInterval(timer);
      return max;
    },
  };
}

export function serveLoopProbe(): void {
  const send = process.send?.bind(process);
  if (send === undefined) return;
  const delay = monitorEventLoopDelay({ resolution: 1 });
  let cpu: ReturnType<typeof cpuBetweenTicks> | null = null;
  try {
    threadCpuMs();
    cpu = cpuBetweenTicks();
  } catch {
    // Not Linux: the wall clock only.
  }
  process.on('message', (message: LoopProbeRequest) => {
    if (message.loop === 'start') {
      delay.reset();
      delay.enable();
      cpu?.start();
    } else if (message.loop === 'read') {
      delay.disable();
      const reading: LoopReading = { loopMaxMs: delay.max / 1e6, loopCpuMaxMs: cpu?.stop() ?? Number.NaN };
      send(reading);
    }
  });
  // The channel alone must not keep the process alive.
  process.channel?.unref();
}
