/**
 * What one paid request costs the shared parts of a many-instance deployment: Redis and PostgreSQL.
 * One gateway instance (billing on PostgreSQL + Redis, rate limits per key and per account) in front
 * of the bench upstream; its Redis is a redis-server of the bench's own, and both services are
 * reached through counting proxies on loopback. Per request, for plain, streamed and translated chat:
 *
 * - Redis: commands sent (and which), round trips (a client write that waits for a reply), bytes each
 *   way, the commands the server ran (scripts' own commands included, from INFO commandstats) and the
 *   server's CPU time (INFO cpu);
 * - PostgreSQL: statements and rows (each query's rowCount, counted in node-postgres on the proxied
 *   connections), bytes each way, and the CPU time of the database's own backends (/proc);
 * - the instance: this process's CPU time (the load, the bench upstream and the proxies run in it too:
 *   an upper bound).
 *
 * Round trips are counted twice: under the concurrent load (commands of several requests share a
 * write there) and, in brackets, with one request at a time (the round trips on a request's path).
 *
 * Prints a table; asserts nothing. Skips, saying so, without PostgreSQL or redis-server.
 *
 *   npm run bench:store-ops        (REQUESTS=… per kind, 1000 by default; CONCURRENCY=…, 16)
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import pino from 'pino';
import { Redis } from 'ioredis';
import { SECRET_KEY_VARIABLE } from '../src/auth/secret-key';
import { parseConfig } from '../src/config/load';
import { startGateway } from '../src/gateway';
import { openStore } from '../src/store/open';
import { benchConfigText, createBenchAccount } from './gateway-setup';
import { startBenchUpstream } from './fake-upstream';

const REQUESTS = Number(process.env.REQUESTS ?? 1000);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 16);
/** Requests sent one at a time per kind, for the round trips on a request's own path. */
const SEQUENTIAL = 100;
const PG_ADMIN_URL = process.env.TOLLGATE_BENCH_PG_URL ?? `postgres://${encodeURIComponent(userInfo().username)}@127.0.0.1:5432/test`;
const CLOCK_TICKS_PER_S = 100;
// The bench's own database only: a random key of the run, as a fresh deployment would make one.
process.env[SECRET_KEY_VARIABLE] ??= randomBytes(32).toString('base64');

/** A TCP proxy that counts bytes each way and round trips: a client write after the server last spoke (or first). */
interface Counted {
  readonly port: number;
  up: number;
  down: number;
  roundTrips: number;
  /** Every chunk the clients sent, for parsing Redis commands (Redis only). */
  readonly onClientData: ((chunk: Buffer, socket: Socket) => void) | null;
  close(): Promise<void>;
}

async function countingProxy(targetPort: number, onClientData: Counted['onClientData'] = null): Promise<Counted> {
  const sockets = new Set<Socket>();
  const counted: Counted = { port: 0, up: 0, down: 0, roundTrips: 0, onClientData, close: async () => undefined };
  const server: Server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort });
    sockets.add(client).add(upstream);
    let serverSpoke = true;
    client.on('data', (chunk: Buffer) => {
      counted.up += chunk.length;
      if (serverSpoke) counted.roundTrips += 1;
      serverSpoke = false;
      counted.onClientData?.(chunk, client);
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      counted.down += chunk.length;
      serverSpoke = true;
      client.write(chunk);
    });
    const end = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return Object.assign(counted, {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  });
}

/** Counts the RESP commands (arrays of bulk strings) each connection sends, by name. */
class RespCommands {
  readonly byName = new Map<string, number>();
  private readonly pending = new WeakMap<Socket, Buffer>();

  feed(chunk: Buffer, socket: Socket): void {
    let buffer = Buffer.concat([this.pending.get(socket) ?? Buffer.alloc(0), chunk]);
    for (;;) {
      const parsed = parseCommand(buffer);
      if (parsed === null) break;
      this.byName.set(parsed.name, (this.byName.get(parsed.name) ?? 0) + 1);
      buffer = buffer.subarray(parsed.length);
    }
    this.pending.set(socket, buffer);
  }

  total(): number {
    let sum = 0;
    for (const count of this.byName.values()) sum += count;
    return sum;
  }
}

function parseCommand(buffer: Buffer): { name: string; length: number } | null {
  if (buffer.length === 0 || buffer[0] !== 0x2a) return null;
  let at = buffer.indexOf('\r\n');
  if (at < 0) return null;
  const count = Number(buffer.subarray(1, at).toString());
  at += 2;
  let name = '';
  for (let index = 0; index < count; index++) {
    const end = buffer.indexOf('\r\n', at);
    if (end < 0 || buffer[at] !== 0x24) return null;
    const size = Number(buffer.subarray(at + 1, end).toString());
    if (buffer.length < end + 2 + size + 2) return null;
    if (index === 0) name = buffer.subarray(end + 2, end + 2 + size).toString().toUpperCase();
    at = end + 2 + size + 2;
  }
  return { name, length: at };
}

/** Statements and rows on node-postgres connections to `port` (the proxy's): every query of the gateway's store. */
async function countPostgres(port: number): Promise<{ statements: number; rows: number }> {
  const pg = await import('pg');
  const counts = { statements: 0, rows: 0 };
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function patched(this: { connectionParameters?: { port?: number } }, ...args: unknown[]) {
    const result = (original as (...inner: unknown[]) => unknown).apply(this, args);
    if (this.connectionParameters?.port === port) {
      counts.statements += 1;
      if (result instanceof Promise) result.then((value: { rowCount?: number | null }) => (counts.rows += value?.rowCount ?? 0), () => undefined);
    }
    return result;
  } as typeof original;
  return counts;
}

/** CPU seconds of the PostgreSQL backends serving `database`, read from /proc (same machine). */
async function backendCpu(admin: import('pg').Client, database: string): Promise<number> {
  const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [database]);
  let ticks = 0;
  for (const { pid } of rows) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // A backend gone since the query: its time is lost to the figure, which is a lower bound then.
    }
  }
  return ticks / CLOCK_TICKS_PER_S;
}

async function redisInfo(redis: Redis): Promise<{ cpu: number; commands: number }> {
  const cpu = await redis.info('cpu');
  const used = (name: string): number => Number(new RegExp(`${name}:([0-9.]+)`).exec(cpu)?.[1] ?? 0);
  const stats = await redis.info('commandstats');
  let commands = 0;
  // INFO's own calls are left out: they are the bench's, not the gateway's.
  for (const match of stats.matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g)) if (match[1] !== 'info') commands += Number(match[2]);
  return { cpu: used('used_cpu_user') + used('used_cpu_sys'), commands };
}

interface Kind {
  readonly name: string;
  readonly path: string;
  readonly body: string;
}

const CHAT = { model: 'gpt-bench', max_tokens: 64, messages: [{ role: 'user', content: 'Say something short.' }] };
const KINDS: readonly Kind[] = [
  { name: 'plain (chat completions)', path: '/v1/chat/completions', body: JSON.stringify(CHAT) },
  { name: 'streamed (chat completions, SSE)', path: '/v1/chat/completions', body: JSON.stringify({ ...CHAT, stream: true, stream_options: { include_usage: true } }) },
  { name: 'translated (Messages to an OpenAI model)', path: '/v1/messages', body: JSON.stringify(CHAT) },
];

async function startRedisServer(): Promise<{ port: number; child: ChildProcess; dir: string }> {
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port: free } = probe.address() as AddressInfo;
      probe.close(() => resolve(free));
    });
  });
  const dir = mkdtempSync(`${tmpdir()}/tollgate-store-ops-`);
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  for (let tries = 0; ; tries++) {
    const probe = new Redis({ port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined);
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      return { port, child, dir };
    } catch {
      probe.disconnect();
      if (tries > 100) throw new Error('redis-server did not answer');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

async function main(): Promise<void> {
  if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status !== 0) {
    console.log('redis-server is not installed: bench skipped');
    return;
  }
  const { Client } = await import('pg');
  const admin = new Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 1000 });
  try {
    await admin.connect();
  } catch {
    console.log(`PostgreSQL is not reachable at ${PG_ADMIN_URL}: bench skipped`);
    return;
  }
  const database = `tollgate_store_ops_${randomBytes(4).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${database}`);
  const redisServer = await startRedisServer();
  const commands = new RespCommands();
  const redisProxy = await countingProxy(redisServer.port, (chunk, socket) => commands.feed(chunk, socket));
  const pgPort = Number(new URL(PG_ADMIN_URL).port || 5432);
  const pgProxy = await countingProxy(pgPort);
  const pgCounts = await countPostgres(pgProxy.port);
  const direct = new URL(PG_ADMIN_URL);
  direct.pathname = `/${database}`;
  const proxied = new URL(direct);
  proxied.port = String(pgProxy.port);
  const upstream = await startBenchUpstream({ tokens: 20, deltaMs: 0 });
  const observer = new Redis({ port: redisServer.port });

  try {
    const setupStore = openStore({ url: direct.toString() });
    await setupStore.migrate();
    const key = await createBenchAccount(setupStore, true);
    await setupStore.close();
    const text = benchConfigText(upstream.url, true, proxied.toString(), `server: { host: 127.0.0.1 }\nredis: { url: "redis://127.0.0.1:${redisProxy.port}", key_prefix: "bench:" }\n`);
    const gateway = await startGateway({ config: parseConfig(text, 'store-ops.yaml', {}), port: 0, logger: pino({ level: 'silent' }) });
    const headers = { authorization: `Bearer ${key}`, 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' };
    const send = async (kind: Kind): Promise<void> => {
      const res = await fetch(`${gateway.url}${kind.path}`, { method: 'POST', headers, body: kind.body });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${kind.name}: status ${res.status}`);
    };
    const checkStore = new Client({ connectionString: direct.toString() });
    await checkStore.connect();
    const charges = async (): Promise<number> => Number((await checkStore.query<{ n: string }>('SELECT count(*) AS n FROM charges')).rows[0].n);
    const rows: string[][] = [];
    const perRequest = (value: number): string => (value / REQUESTS).toFixed(2);
    // Warm: every kind once, so the account's live balance is seeded and pools are open.
    for (const kind of KINDS) for (let index = 0; index < 20; index++) await send(kind);
    // Round trips on one request's path: one at a time, so no other request's commands share a write.
    const chained = new Map<string, { redis: number; pg: number }>();
    for (const kind of KINDS) {
      const from = { redis: redisProxy.roundTrips, pg: pgProxy.roundTrips };
      for (let index = 0; index < SEQUENTIAL; index++) await send(kind);
      chained.set(kind.name, { redis: (redisProxy.roundTrips - from.redis) / SEQUENTIAL, pg: (pgProxy.roundTrips - from.pg) / SEQUENTIAL });
    }
    for (const kind of KINDS) {
      const before = await charges();
      const wait = async (): Promise<void> => {
        for (let tries = 0; (await charges()) < before + REQUESTS && tries < 400; tries++) await new Promise((resolve) => setTimeout(resolve, 25));
      };
      await wait();
      await new Promise((resolve) => setTimeout(resolve, 100));
      const start = {
        redis: await redisInfo(observer),
        sent: commands.total(),
        names: new Map(commands.byName),
        redisUp: redisProxy.up,
        redisDown: redisProxy.down,
        redisTrips: redisProxy.roundTrips,
        pgUp: pgProxy.up,
        pgDown: pgProxy.down,
        pgTrips: pgProxy.roundTrips,
        statements: pgCounts.statements,
        rows: pgCounts.rows,
        pgCpu: await backendCpu(admin, database),
        cpu: process.cpuUsage(),
        at: performance.now(),
      };
      let next = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next++ < REQUESTS) await send(kind);
        }),
      );
      const elapsed = performance.now() - start.at;
      const ownCpu = process.cpuUsage(start.cpu);
      // Every charge of the phase written, so the ledger's statements are counted in it.
      const target = before + REQUESTS;
      for (let tries = 0; (await charges()) < target && tries < 400; tries++) await new Promise((resolve) => setTimeout(resolve, 25));
      await new Promise((resolve) => setTimeout(resolve, 100));
      const end = await redisInfo(observer);
      const names = [...commands.byName].map(([name, count]) => [name, count - (start.names.get(name) ?? 0)] as const).filter(([, count]) => count > 0);
      rows.push([
        kind.name,
        `${Math.round((REQUESTS / elapsed) * 1000)}`,
        perRequest(commands.total() - start.sent),
        names.filter(([, count]) => count / REQUESTS >= 0.01).map(([name, count]) => `${name} ${perRequest(count)}`).join(', '),
        `${perRequest(redisProxy.roundTrips - start.redisTrips)} (${chained.get(kind.name)!.redis.toFixed(2)})`,
        perRequest(end.commands - start.redis.commands - 2),
        `${Math.round(redisProxy.up - start.redisUp) / REQUESTS | 0} / ${Math.round(redisProxy.down - start.redisDown) / REQUESTS | 0}`,
        ((end.cpu - start.redis.cpu) * 1e6 / REQUESTS).toFixed(0),
        perRequest(pgCounts.statements - start.statements),
        perRequest(pgCounts.rows - start.rows),
        `${perRequest(pgProxy.roundTrips - start.pgTrips)} (${chained.get(kind.name)!.pg.toFixed(2)})`,
        `${Math.round(pgProxy.up - start.pgUp) / REQUESTS | 0} / ${Math.round(pgProxy.down - start.pgDown) / REQUESTS | 0}`,
        (((await backendCpu(admin, database)) - start.pgCpu) * 1e6 / REQUESTS).toFixed(0),
        (((ownCpu.user + ownCpu.system) / REQUESTS)).toFixed(0),
      ]);
    }
    await checkStore.end();
    await gateway.stop(200);
    console.log(`Per paid request: ${REQUESTS} requests per kind, ${CONCURRENCY} at a time, one instance; Redis and PostgreSQL through counting proxies.\n`);
    const header = ['request', 'req/s', 'Redis commands sent', 'of which', 'Redis round trips (one at a time)', 'Redis commands run (scripts\' own too)', 'Redis bytes up / down', 'Redis CPU µs', 'PG statements', 'PG rows', 'PG round trips (one at a time)', 'PG bytes up / down', 'PG backend CPU µs', 'instance CPU µs (with load, upstream, proxies)'];
    console.log(`| ${header.join(' | ')} |`);
    console.log(`|${header.map(() => '---').join('|')}|`);
    for (const row of rows) console.log(`| ${row.join(' | ')} |`);
  } finally {
    observer.disconnect();
    await upstream.close();
    await redisProxy.close();
    await pgProxy.close();
    redisServer.child.kill('SIGKILL');
    rmSync(redisServer.dir, { recursive: true, force: true });
    await admin.query(`DROP DATABASE ${database} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
