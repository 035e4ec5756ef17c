/**
 * Tollgate with several worker processes, started as an operator starts it: `bin/tollgate.js serve
 * --config <file>` with `server: { workers: N }`, the bench config and a SQLite file in a temporary
 * directory, and the funded bench account created in that store beforehand. The log (stdout, JSON
 * lines) goes to a file there, which is watched for the primary's listening line.
 *
 * A Tollgate without the `server.workers` option refuses the config and exits: that, or a primary
 * that starts no workers, is reported as unavailable, not thrown, so the run goes on without the row.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import { parseConfig } from '../src/config/load';
import { openStore } from '../src/store/open';
import { benchConfigText, createBenchAccount } from './gateway-setup';
import { childPids } from './processes';

interface ClusterGateway {
  readonly url: string;
  readonly key: string;
  readonly primaryPid: number;
  /** The primary and its workers, read afresh: a worker the primary replaces is counted. */
  pids(): number[];
  /** Where the cluster writes its log; truncated between scenarios to bound its size. */
  readonly logFile: string;
  stop(): Promise<void>;
}

export type ClusterStart = { readonly available: true; readonly gateway: ClusterGateway } | { readonly available: false; readonly reason: string };

const READY_TIMEOUT_MS = 60_000;
const BIN = path.join(__dirname, '..', '..', 'bin', 'tollgate.js');

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** The log line a serving primary prints once it listens: JSON (`"msg":"tollgate is listening"`) or text. */
function listeningLine(log: string): string | undefined {
  return log.split('\n').find((line) => /listening/i.test(line));
}

async function answers(url: string): Promise<boolean> {
  try {
    const res = await fetch(url);
    await res.arrayBuffer();
    return res.ok;
  } catch {
    return false;
  }
}

/** Resolves when `child` exits (or at once if it already has). */
function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Like sleep, but does not keep the process alive: for a deadline raced against something else. */
const deadlineAfter = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());

export interface ClusterOptions {
  readonly upstreamUrl: string;
  /** A temporary directory for the config, the SQLite file, the pid file and the log. */
  readonly dir: string;
  readonly workers: number;
  /** `info` logs every request as production does; `warn` leaves the request log out. */
  readonly logLevel: 'info' | 'warn';
}

export async function startClusterGateway({ upstreamUrl, dir, workers, logLevel }: ClusterOptions): Promise<ClusterStart> {
  const storeUrl = `sqlite:${path.join(dir, 'cluster.db')}`;
  // The account is made with the config that has no server block, which every Tollgate accepts.
  const setupConfig = parseConfig(benchConfigText(upstreamUrl, true, storeUrl), 'bench.yaml', {});
  const store = openStore(setupConfig.store);
  await store.migrate();
  const key = await createBenchAccount(store, true);
  await store.close();

  const port = await freePort();
  const configFile = path.join(dir, 'cluster.yaml');
  // No unready delay on stop: the bench stops it only when done.
  const server = `server: { workers: ${workers}, port: ${port}, shutdown_unready_ms: 0, shutdown_grace_ms: 1000 }\n`;
  writeFileSync(configFile, benchConfigText(upstreamUrl, true, storeUrl, server));
  const logFile = path.join(dir, 'cluster.log');
  // Appending: truncating the file between scenarios then leaves no hole where the writer was.
  const logFd = openSync(logFile, 'a');
  const child = spawn(process.execPath, [BIN, 'serve', '--config', configFile, '--pid-file', path.join(dir, 'cluster.pid')], {
    cwd: dir,
    stdio: ['ignore', logFd, 'pipe'],
    // Request log lines are written at info; `warn` leaves them out (BENCH_LOG=silent).
    env: { ...process.env, LOG_LEVEL: logLevel },
  });
  closeSync(logFd);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  // The listening line is logged at info; at warn (no request log) /readyz answering says the same.
  let ready = false;
  while (!ready) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const said = (stderr.trim() || (existsSync(logFile) ? readFileSync(logFile, 'utf8').trim() : '')).split('\n').slice(-3).join(' ');
      return { available: false, reason: `tollgate serve exited (${child.exitCode ?? child.signalCode}): ${said}` };
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      return { available: false, reason: `no listening line within ${READY_TIMEOUT_MS / 1000} s` };
    }
    await sleep(50);
    ready = listeningLine(readFileSync(logFile, 'utf8')) !== undefined || (logLevel !== 'info' && (await answers(`${url}/readyz`)));
  }

  const primaryPid = child.pid!;
  const gateway: ClusterGateway = {
    url,
    key,
    primaryPid,
    logFile,
    pids: () => [primaryPid, ...childPids(primaryPid)],
    stop: async () => {
      const pids = gateway.pids();
      child.kill('SIGTERM');
      const stopped = await Promise.race([exited(child).then(() => true), deadlineAfter(10_000).then(() => false)]);
      if (stopped) return;
      // A primary that does not stop in time: end it and the workers it started, by pid.
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
    },
  };
  // Workers can come up a moment after the primary's line; wait a little for them.
  while (gateway.pids().length - 1 < workers && Date.now() < deadline) await sleep(50);
  const started = gateway.pids().length - 1;
  if (started < workers) {
    await gateway.stop();
    return { available: false, reason: `the primary listens but ${started} of ${workers} worker processes started (is server.workers implemented?)` };
  }
  return { available: true, gateway };
}
