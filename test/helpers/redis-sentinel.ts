/**
 * A Redis Sentinel deployment of the test's own: a primary, two replicas and three Sentinels (quorum
 * two), each on a free port, in one temporary folder, without persistence, stopped by pid. The
 * Sentinels call a primary down after `DOWN_AFTER_MS` without an answer and may retry a failed
 * failover after twice `FAILOVER_TIMEOUT_MS`, so a killed primary is replaced within seconds. Null,
 * with the reason, where neither `redis-sentinel` nor `redis-server` is installed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';

const SENTINEL_MASTER_NAME = 'tollgate-test';
/** Sentinel's down-after-milliseconds: how long a silent primary has before it is called down. */
const DOWN_AFTER_MS = 1000;
/** Sentinel's failover-timeout: a failover that stalls is tried again after twice this. */
const FAILOVER_TIMEOUT_MS = 2000;
/**
 * How long a killed primary may take to be replaced, at the most: called down after DOWN_AFTER_MS,
 * a first election that fails (split votes) and a second one, each up to twice FAILOVER_TIMEOUT_MS,
 * and a margin for a loaded machine. Measured here: about 2.3 s.
 */
export const PROMOTION_BOUND_MS = DOWN_AFTER_MS + 2 * 2 * FAILOVER_TIMEOUT_MS + 5000;

export interface OwnSentinels {
  /** The Sentinels' addresses, as `redis.sentinels` takes them. */
  readonly sentinels: readonly string[];
  readonly name: string;
  /** The port of the server the Sentinels call primary now. */
  primaryPort(): Promise<number>;
  /** Kills the current primary with SIGKILL and waits for it to exit; its port. */
  killPrimary(): Promise<number>;
  /** Waits until the Sentinels name a primary other than `oldPort` and it answers as one; its port. */
  promoted(oldPort: number, timeoutMs: number): Promise<number>;
  close(): Promise<void>;
}

/** The command that runs a Sentinel: Debian's `redis-sentinel`, or `redis-server --sentinel` (the same binary). */
function sentinelCommand(): {
  command: string;
  args: readonly string[];
} | null {
  if (runs('redis-sentinel', ['--version'])) return { command: 'redis-sentinel', args: [] };
  if (runs('redis-server', ['--version'])) return { command: 'redis-server', args: ['--sentinel'] };
  return null;
}

export function redisSentinelProblem(): string | null {
  if (!runs('redis-server', ['--version'])) return 'redis-server is not installed';
  return sentinelCommand() === null ? 'neither redis-sentinel nor redis-server --sentinel is available' : null;
}

function runs(command: string, args: readonly string[]): boolean {
  const found = spawnSync(command, args, { stdio: 'ignore' });
  return found.error === undefined && found.status === 0;
}

export async function startOwnSentinels(): Promise<OwnSentinels> {
  const sentinelRun = sentinelCommand();
  if (sentinelRun === null) throw new Error('no redis-sentinel: check redisSentinelProblem() first');
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-sentinel-'));
  const children: ChildProcess[] = [];
  const servers = new Map<number, ChildProcess>();

  const [primary, ...replicaPorts] = await freePorts(6);
  const sentinelPorts = replicaPorts.splice(2);
  const serverPorts = [primary, ...replicaPorts];
  for (const port of serverPorts) {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--dbfilename', `dump-${port}.rdb`];
    if (port !== primary) args.push('--replicaof', '127.0.0.1', String(primary));
    const child = spawn('redis-server', args, { stdio: 'ignore' });
    children.push(child);
    servers.set(port, child);
  }
  for (const port of serverPorts) await answers(port);
  for (const port of replicaPorts) await until(async () => (await info(port)).includes('master_link_status:up'), `replica ${port} in sync`);

  for (const port of sentinelPorts) {
    // Sentinel rewrites its file (what it learns of replicas, peers and failovers), so each has its own.
    const file = path.join(dir, `sentinel-${port}.conf`);
    writeFileSync(
      file,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${SENTINEL_MASTER_NAME} 127.0.0.1 ${primary} 2`,
        `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} ${DOWN_AFTER_MS}`,
        `sentinel failover-timeout ${SENTINEL_MASTER_NAME} ${FAILOVER_TIMEOUT_MS}`,
        `sentinel parallel-syncs ${SENTINEL_MASTER_NAME} 1`,
        '',
      ].join('\n'),
    );
    children.push(spawn(sentinelRun.command, [file, ...sentinelRun.args], { stdio: 'ignore' }));
  }
  for (const port of sentinelPorts) await answers(port);
  // A failover needs the quorum to agree and a majority to elect a leader: every Sentinel must know
  // the other two (they find each other through the primary) and both replicas first.
  for (const port of sentinelPorts) {
    await until(async () => {
      const peers = (await ask(port, ['SENTINEL', 'SENTINELS', SENTINEL_MASTER_NAME])) as unknown[];
      const replicas = (await ask(port, ['SENTINEL', 'REPLICAS', SENTINEL_MASTER_NAME])) as unknown[];
      return peers.length === 2 && replicas.length === 2;
    }, `Sentinel ${port} knowing its peers and the replicas`);
  }

  async function primaryPort(): Promise<number> {
    for (const port of sentinelPorts) {
      const reply = await ask(port, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER_NAME]).catch(() => null);
      if (Array.isArray(reply)) return Number(reply[1]);
    }
    throw new Error('no Sentinel answers');
  }

  async function stop(child: ChildProcess): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }

  return {
    sentinels: sentinelPorts.map((port) => `127.0.0.1:${port}`),
    name: SENTINEL_MASTER_NAME,
    primaryPort,
    async killPrimary() {
      const port = await primaryPort();
      const child = servers.get(port);
      if (child === undefined) throw new Error(`the primary ${port} is none of this deployment's servers`);
      await stop(child);
      return port;
    },
    async promoted(oldPort, timeoutMs) {
      let port = oldPort;
      await until(
        async () => {
          port = await primaryPort();
          return port !== oldPort && (await info(port)).includes('role:master');
        },
        `a replica promoted in place of ${oldPort}`,
        timeoutMs,
      );
      return port;
    },
    async close() {
      for (const child of children) await stop(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One command on a short-lived connection that never retries. */
async function ask(port: number, command: readonly string[]): Promise<unknown> {
  const client = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1000,
    commandTimeout: 1000,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(command[0], ...command.slice(1));
  } finally {
    client.disconnect();
  }
}

async function info(port: number): Promise<string> {
  return String(await ask(port, ['INFO', 'replication']).catch(() => ''));
}

async function answers(port: number): Promise<void> {
  await until(async () => (await ask(port, ['PING']).catch(() => null)) === 'PONG', `port ${port} answering`);
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** `count` distinct free ports: all held open at once, so none is handed out twice. */
async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Server>((resolve) => {
          const server = createServer().listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((server) => (server.address() as { port: number }).port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}
