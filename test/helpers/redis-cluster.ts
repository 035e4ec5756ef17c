/**
 * A Redis Cluster of the test's own: three primaries with a replica each, every server on a free port
 * in one temporary folder, without persistence, made by `redis-cli --cluster create` and stopped by
 * pid. A primary called down after `NODE_TIMEOUT_MS` is replaced by its replica within seconds. Null,
 * with the reason, where `redis-server` or `redis-cli` is not installed.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';

/** cluster-node-timeout: how long a silent primary has before the others call it down. */
const NODE_TIMEOUT_MS = 1000;
/**
 * How long a killed primary may take to be replaced, at the most: called down after the node timeout,
 * an election (a replica waits up to about a second plus its rank before asking), a second election
 * if the first fails (twice the node timeout later), and a margin for a loaded machine.
 */
export const CLUSTER_PROMOTION_BOUND_MS = NODE_TIMEOUT_MS * 6 + 8000;

interface ClusterNode {
  readonly port: number;
  readonly id: string;
  readonly role: 'master' | 'replica';
  /** A primary's slot ranges, first and last slot of each. */
  readonly slots: readonly [number, number][];
}

export interface OwnCluster {
  /** Every server's address, as `redis.cluster` takes them (any of them is a seed). */
  readonly seeds: readonly string[];
  /** The cluster's view of its nodes, from any server that answers. */
  nodes(): Promise<ClusterNode[]>;
  /** The slot `key` hashes to. */
  slotOf(key: string): Promise<number>;
  /** The primary serving `slot` now. */
  primaryOf(slot: number): Promise<ClusterNode>;
  /** Kills the server on `port` with SIGKILL and waits for it to exit. */
  kill(port: number): Promise<void>;
  /** Waits until `slot` is served by a primary other than `oldPort` and the cluster is ok; its port. */
  promoted(slot: number, oldPort: number, timeoutMs: number): Promise<number>;
  /** Moves `slot` from its primary to `toPort`'s, keys and all (MIGRATING/IMPORTING, MIGRATE, SETSLOT NODE). */
  migrateSlot(slot: number, toPort: number): Promise<void>;
  close(): Promise<void>;
}

export function redisClusterProblem(): string | null {
  if (!runs('redis-server', ['--version'])) return 'redis-server is not installed';
  if (!runs('redis-cli', ['--version'])) return 'redis-cli is not installed';
  return null;
}

function runs(command: string, args: readonly string[]): boolean {
  const found = spawnSync(command, args, { stdio: 'ignore' });
  return found.error === undefined && found.status === 0;
}

export async function startOwnCluster(): Promise<OwnCluster> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-cluster-'));
  const ports = await freePorts(6);
  const servers = new Map<number, ChildProcess>();
  for (const port of ports) {
    const args = [
      '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir,
      '--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', String(NODE_TIMEOUT_MS),
      // A replica whose link broke just now may still be promoted: the test kills primaries on purpose.
      '--cluster-replica-validity-factor', '0',
    ];
    servers.set(port, spawn('redis-server', args, { stdio: 'ignore' }));
  }
  const closeAll = async (): Promise<void> => {
    for (const child of servers.values()) await stop(child);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const port of ports) await answers(port);
    const created = spawnSync('redis-cli', ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', '1', '--cluster-yes'], { encoding: 'utf8', timeout: 60_000 });
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed: ${created.stdout}${created.stderr}`);
    await until(async () => {
      for (const port of ports) if (!String(await ask(port, ['CLUSTER', 'INFO'])).includes('cluster_state:ok')) return false;
      const nodes = await nodesVia(ports[0]);
      return nodes.filter((node) => node.role === 'replica').length === 3;
    }, 'the cluster ok on every node, with three replicas');
  } catch (error) {
    await closeAll();
    throw error;
  }

  async function nodes(): Promise<ClusterNode[]> {
    for (const port of ports) {
      if (!alive(port)) continue;
      const found = await nodesVia(port).catch(() => null);
      if (found !== null) return found;
    }
    throw new Error('no cluster node answers');
  }

  function alive(port: number): boolean {
    const child = servers.get(port);
    return child !== undefined && child.exitCode === null && child.signalCode === null;
  }

  async function primaryOf(slot: number): Promise<ClusterNode> {
    const primary = (await nodes()).find((node) => node.role === 'master' && node.slots.some(([from, to]) => slot >= from && slot <= to));
    if (primary === undefined) throw new Error(`no primary serves slot ${slot}`);
    return primary;
  }

  return {
    seeds: ports.map((port) => `127.0.0.1:${port}`),
    nodes,
    primaryOf,
    async slotOf(key) {
      for (const port of ports) if (alive(port)) return Number(await ask(port, ['CLUSTER', 'KEYSLOT', key]));
      throw new Error('no cluster node answers');
    },
    async kill(port) {
      const child = servers.get(port);
      if (child !== undefined) await stop(child);
    },
    async promoted(slot, oldPort, timeoutMs) {
      let port = oldPort;
      await until(
        async () => {
          port = (await primaryOf(slot)).port;
          if (port === oldPort) return false;
          for (const other of ports) if (alive(other) && !String(await ask(other, ['CLUSTER', 'INFO'])).includes('cluster_state:ok')) return false;
          return true;
        },
        `slot ${slot} served by a primary other than ${oldPort}`,
        timeoutMs,
      );
      return port;
    },
    async migrateSlot(slot, toPort) {
      const from = await primaryOf(slot);
      const to = (await nodes()).find((node) => node.port === toPort);
      if (to === undefined || to.role !== 'master') throw new Error(`${toPort} is not a primary`);
      if (to.id === from.id) return;
      await ask(to.port, ['CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', from.id]);
      await ask(from.port, ['CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', to.id]);
      // A few keys a batch, with pauses, so requests keep arriving while the slot is half moved (ASK).
      for (;;) {
        const keys = (await ask(from.port, ['CLUSTER', 'GETKEYSINSLOT', String(slot), '5'])) as string[];
        if (keys.length === 0) break;
        await ask(from.port, ['MIGRATE', '127.0.0.1', String(to.port), '', '0', '5000', 'KEYS', ...keys]);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      for (const node of (await nodes()).filter((candidate) => candidate.role === 'master')) {
        await ask(node.port, ['CLUSTER', 'SETSLOT', String(slot), 'NODE', to.id]);
      }
    },
    close: closeAll,
  };
}

async function nodesVia(port: number): Promise<ClusterNode[]> {
  const text = String(await ask(port, ['CLUSTER', 'NODES']));
  const found: ClusterNode[] = [];
  for (const line of text.trim().split('\n')) {
    const [id, address, flags, , , , , linkState, ...ranges] = line.split(' ');
    if (flags.includes('fail') || flags.includes('noaddr') || linkState !== 'connected') continue;
    const port = Number(address.split('@')[0].split(':')[1]);
    const slots = ranges.filter((range) => !range.startsWith('[')).map((range): [number, number] => {
      const [from, to] = range.split('-').map(Number);
      return [from, to ?? from];
    });
    found.push({ port, id, role: flags.includes('master') ? 'master' : 'replica', slots });
  }
  return found;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/** One command on a short-lived connection that never retries. */
async function ask(port: number, command: readonly string[]): Promise<unknown> {
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000, commandTimeout: 5000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(command[0], ...command.slice(1));
  } finally {
    client.disconnect();
  }
}

async function answers(port: number): Promise<void> {
  await until(async () => (await ask(port, ['PING']).catch(() => null)) === 'PONG', `port ${port} answering`);
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** `count` distinct free ports, each with its cluster bus port (+10000) free too. */
async function freePorts(count: number): Promise<number[]> {
  const held: Server[] = [];
  const ports: number[] = [];
  const listen = (port: number): Promise<Server | null> =>
    new Promise((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(null));
      server.listen(port, '127.0.0.1', () => resolve(server));
    });
  while (ports.length < count) {
    const base = await listen(0);
    if (base === null) continue;
    const port = (base.address() as { port: number }).port;
    const bus = port + 10000 <= 65535 ? await listen(port + 10000) : null;
    held.push(base);
    if (bus === null) continue;
    held.push(bus);
    ports.push(port);
  }
  await Promise.all(held.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}
