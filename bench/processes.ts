/** Starting the benchmark's servers as separate processes, as they run in production. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { LoopProbeRequest, LoopReading } from './loop-probe';

export type { LoopReading };

export interface ServerProcess<T> {
  readonly info: T;
  readonly child: ChildProcess;
  stop(): void;
}

/** Spawns `node <script> ...args` (a file beside this one) and resolves with the JSON line it prints. */
export function startServerProcess<T>(script: string, args: readonly string[] = [], nodeArgs: readonly string[] = []): Promise<ServerProcess<T>> {
  // The IPC channel is for bench/loop-probe.ts; a script that installs no probe ignores it.
  const child = spawn(process.execPath, [...nodeArgs, path.join(__dirname, script), ...args], {
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code} before it was ready`)));
    createInterface({ input: child.stdout! }).once('line', (line) => {
      resolve({ info: JSON.parse(line) as T, child, stop: () => child.kill('SIGTERM') });
    });
  });
}

/** Starts the loop probe of a process started by {@link startServerProcess} (bench/loop-probe.ts). */
export function startLoopProbe(child: ChildProcess): void {
  const request: LoopProbeRequest = { loop: 'start' };
  child.send(request);
}

/** How long {@link readLoopProbe} waits for an answer before it takes the process to have no probe. */
const PROBE_ANSWER_MS = 2000;

/**
 * The longest event-loop block since {@link startLoopProbe}, in ms of wall clock and of CPU. A process
 * without the probe (a build from before bench/loop-probe.ts, which bench:ab may run) never answers:
 * after PROBE_ANSWER_MS both figures are NaN, which the tables print as n/a, and the bench goes on.
 */
export function readLoopProbe(child: ChildProcess): Promise<LoopReading> {
  return new Promise((resolve) => {
    const answer = (reading: LoopReading) => {
      clearTimeout(timer);
      resolve(reading);
    };
    const timer = setTimeout(() => {
      child.off('message', answer);
      resolve({ loopMaxMs: Number.NaN, loopCpuMaxMs: Number.NaN });
    }, PROBE_ANSWER_MS);
    child.once('message', answer);
    const request: LoopProbeRequest = { loop: 'read' };
    child.send(request);
  });
}

/**
 * The processes started by `pid` (a cluster primary's workers), from the parent field of every
 * /proc/<pid>/stat: /proc/<pid>/task/<tid>/children needs a kernel option many lack (Linux only).
 */
export function childPids(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The parent pid is the second field after the command name, which may itself hold spaces.
      if (Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1].split(' ')[1]) === pid) children.push(Number(entry));
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return children;
}

/** CPU time (user + system) a process has used so far, in milliseconds, from /proc (Linux only). */
export function cpuMillis(pid: number): number {
  return ticksToMillis(readFileSync(`/proc/${pid}/stat`, 'utf8'));
}

/** CPU time of a process's main thread (its JavaScript thread), in milliseconds (Linux only). */
export function mainThreadCpuMillis(pid: number): number {
  return ticksToMillis(readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8'));
}

function ticksToMillis(stat: string): number {
  const fields = stat.split(') ')[1].split(' ');
  // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command name; in clock ticks (100 Hz).
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU time of several processes together, in milliseconds; one that has ended counts 0. */
export function totalCpuMillis(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + orZero(() => cpuMillis(pid)), 0);
}

/** Resident set size of several processes together, in MiB; one that has ended counts 0. */
export function totalRssMiB(pids: readonly number[]): number {
  return pids.reduce((sum, pid) => sum + orZero(() => rssMiB(pid)), 0);
}

function orZero(read: () => number): number {
  try {
    return read();
  } catch {
    return 0;
  }
}

/** Resident set size of a process, in MiB, from /proc/<pid>/status VmRSS (Linux only). */
export function rssMiB(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match === null ? 0 : Number(match[1]) / 1024;
}

/** Open file descriptors of a process (sockets included), from /proc/<pid>/fd (Linux only). */
export function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}
