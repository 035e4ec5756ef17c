/** `tollgate serve` as a child process, for tests of the real command: started in a folder, read from its log. */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths';
import type { LoopBlocks } from './block-meter';
import { waitUntil } from './fake-upstream';

export const CLI = path.join(PACKAGE_ROOT, 'bin', 'tollgate.js');

export interface ServedChild {
  readonly child: ChildProcess;
  readonly url: string;
  /** The first-run key, or '' when the store already had an admin. */
  readonly key: string;
  readonly stdout: () => string;
}

export interface ServeChildOptions {
  /** Wait for the first-run key as well (the store is new); true by default. */
  readonly firstRun?: boolean;
  /** Added to a bare environment (PATH and LOG_LEVEL=info). */
  readonly env?: NodeJS.ProcessEnv;
  /** Node's own options, before the script (`--require …`). */
  readonly nodeArgs?: readonly string[];
}

/**
 * How long a child may take to listen. It starts in well under a second of CPU, but on a machine
 * running other suites at once its share of the cores can be a fifth of one: 6.5 s was seen on Node 22.
 * This is a wait for an event, not a measure of start-up (bench/ measures that).
 */
export const SERVE_START_BOUND_MS = 30_000;

/** Starts `tollgate serve --port 0` in `dir`; resolves once it listens and, on a first run, has printed its key. */
export function serveChild(dir: string, options: ServeChildOptions = {}): Promise<ServedChild> {
  const firstRun = options.firstRun ?? true;
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), CLI, 'serve', '--port', '0'], {
    cwd: dir,
    env: { PATH: process.env.PATH, LOG_LEVEL: 'info', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  const listening = waitUntil(
    () => {
      const url = /"url":"(http:\/\/[^"]+)".*"msg":"tollgate is listening"/.exec(out)?.[1];
      const key = /^\s+(sk-[A-Za-z0-9]{48})$/m.exec(out)?.[1];
      if (url === undefined || (firstRun && key === undefined)) return undefined;
      return { child, url, key: key ?? '', stdout: () => out };
    },
    SERVE_START_BOUND_MS,
    'tollgate serve to listen',
  );
  return listening.catch((error: Error) => {
    child.kill('SIGKILL');
    throw new Error(`${error.message}; its output:\n${out}`);
  });
}

/** Resolves with the child's exit code once it has exited. */
export function exitCode(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once('exit', (code) => resolve(code))));
}

/** The path of the loop probe to preload into a child (`nodeArgs: ['--require', LOOP_PROBE]`): see loop-probe.ts. */
export const LOOP_PROBE = path.join(__dirname, 'loop-probe.js');

/**
 * Asks the loop probe of `child` (started with `TOLLGATE_LOOP_PROBE_FILE=file` and LOOP_PROBE
 * preloaded) what it saw since it was last asked, and starts it over.
 */
export async function loopProbe(child: ChildProcess, file: string): Promise<LoopBlocks> {
  const seqOf = (): number => {
    try {
      return (JSON.parse(readFileSync(file, 'utf8')) as { seq: number }).seq;
    } catch {
      return 0;
    }
  };
  const before = seqOf();
  child.kill('SIGUSR2');
  await waitUntil(() => (seqOf() > before ? true : undefined), 5000, 'the loop probe to answer');
  const { maxCpuMs, maxWallMs } = JSON.parse(readFileSync(file, 'utf8')) as LoopBlocks;
  return { maxCpuMs, maxWallMs };
}
