/** Starting the benchmark's servers as separate processes, as they run in production. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';

export interface ServerProcess<T> {
  readonly info: T;
  readonly child: ChildProcess;
  stop(): void;
}

/** Spawns `node <script> ...args` (a file beside this one) and resolves with the JSON line it prints. */
export function startServerProcess<T>(script: string, args: readonly string[] = [], nodeArgs: readonly string[] = []): Promise<ServerProcess<T>> {
  const child = spawn(process.execPath, [...nodeArgs, path.join(__dirname, script), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code} before it was ready`)));
    createInterface({ input: child.stdout }).once('line', (line) => {
      resolve({ info: JSON.parse(line) as T, child, stop: () => child.kill('SIGTERM') });
    });
  });
}

/** CPU time (user + system) a process has used so far, in milliseconds, from /proc (Linux only). */
export function cpuMillis(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  // utime and stime are fields 14 and 15 of stat, 12 and 13 after the command name; in clock ticks (100 Hz).
  return (Number(fields[11]) + Number(fields[12])) * 10;
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
