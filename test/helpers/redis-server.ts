/**
 * A redis-server of the test's own, on a free port, in a temporary folder and without persistence, so
 * a test may kill it (by pid) and start it again empty, as a restarted Redis comes back. Null, with
 * the reason, where `redis-server` is not installed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';

export interface OwnRedis {
  readonly url: string;
  readonly port: number;
  /** Kills the server with SIGKILL and waits for it to exit: everything it held is gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty, and waits until it answers. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export function redisServerProblem(): string | null {
  const found = spawnSync('redis-server', ['--version'], { stdio: 'ignore' });
  return found.error === undefined && found.status === 0 ? null : 'redis-server is not installed';
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-redis-'));
  let child: ChildProcess | null = null;

  async function start(): Promise<void> {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
    await answers(port);
  }

  async function kill(): Promise<void> {
    const running = child;
    child = null;
    if (running === null || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGKILL');
    await exited;
  }

  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill,
    restart: start,
    async close() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function answers(port: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      if ((await probe.ping()) === 'PONG') return;
    } catch {
      if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer within 10 s`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      probe.disconnect();
    }
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
