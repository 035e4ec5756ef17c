/**
 * The one place a Redis client is made. ioredis's defaults suit a cache that may be slow, not a gateway
 * that must answer: unbounded offline queue, 20 retries per command, no command timeout, so a dead
 * Redis makes every request wait for seconds (docs/faults.md#g1). Every bound here is explicit, so a
 * caller sees a prompt error it can turn into a 503 or a fallback.
 */
import type * as IORedis from 'ioredis';
import type { Cluster, Redis } from 'ioredis';
import type { RedisConfig } from '../config/types';

/**
 * A connection to Tollgate's Redis: one server's (directly or through Sentinels) or a Redis Cluster's.
 * Both speak the same commands; on a Cluster every script and every multi-key command must keep its
 * keys in one slot (`hashTag`), and a scan must visit every primary (`scanEveryPrimary`).
 */
export type RedisClient = Redis | Cluster;

export interface RedisClientOptions {
  /** Shown in `CLIENT LIST`, to tell Tollgate's connections apart. */
  readonly connectionName?: string;
  /** Connection errors; ioredis emits them on every failed reconnect, so they are not thrown. */
  readonly onError?: (error: Error) => void;
  /** How long one connection attempt may take (a blackholed host never refuses). */
  readonly connectTimeoutMs?: number;
}

/** Where Tollgate's Redis is: one server by its URL, the Sentinels that know a named master's primary, or a Cluster's nodes. */
type RedisAddress =
  | { readonly kind: 'server'; readonly url: string }
  | { readonly kind: 'cluster'; readonly nodes: readonly { readonly host: string; readonly port: number }[]; readonly password: string | undefined }
  | {
      readonly kind: 'sentinel';
      readonly sentinels: readonly { readonly host: string; readonly port: number }[];
      readonly name: string;
      readonly password: string | undefined;
      readonly sentinelPassword: string | undefined;
    };

const DEFAULT_CONNECT_TIMEOUT_MS = 2000;
/** Reconnect delays grow by this much per attempt, up to the cap, plus jitter so instances spread out. */
const RECONNECT_STEP_MS = 100;
const RECONNECT_CAP_MS = 2000;

/** Whether the config names a Redis at all (a server's url, Sentinels or a Cluster); without one, state stays in process. */
export function redisConfigured(config: RedisConfig): boolean {
  return redisAddress(config) !== null;
}

/** The config's Redis; the schema and `redisConfigIssues` have already checked the fields' shape and mix. */
function redisAddress(config: RedisConfig): RedisAddress | null {
  if (config.cluster !== undefined && config.cluster.length > 0) {
    return { kind: 'cluster', nodes: config.cluster.map(hostAndPort), password: config.password === '' ? undefined : config.password };
  }
  if (config.sentinels !== undefined && config.sentinels.length > 0) {
    return {
      kind: 'sentinel',
      sentinels: config.sentinels.map(hostAndPort),
      name: config.name ?? '',
      // An empty password is none: `${REDIS_PASSWORD}` of an unset-but-declared variable.
      password: config.password === '' ? undefined : config.password,
      sentinelPassword: config.sentinel_password === '' ? undefined : config.sentinel_password,
    };
  }
  return config.url === '' ? null : { kind: 'server', url: config.url };
}

/** 'host:port' or '[v6 address]:port', as the schema admits them. */
function hostAndPort(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon);
  return { host: host.startsWith('[') ? host.slice(1, -1) : host, port: Number(address.slice(colon + 1)) };
}

/**
 * A client that fails fast: commands sent while disconnected reject at once (no offline queue), commands
 * sent on a connection that stops answering reject after `command_timeout_ms`, and it keeps
 * reconnecting in the background. Resolves once the first connection attempt has ended, whether or
 * not it succeeded, so a gateway starts (and reports itself unready) while Redis is down.
 *
 * With Sentinels, each connection attempt asks them for the current primary, so a reconnect after a
 * failover reaches the promoted replica; the failover detector drops the connection as soon as a
 * Sentinel announces a new primary, and a server that answers READONLY (a primary demoted under a
 * live connection) is left for a fresh look too.
 */
export async function connectRedis(config: RedisConfig, options: RedisClientOptions = {}): Promise<RedisClient> {
  const address = redisAddress(config);
  if (address === null) throw new Error('redis: none of redis.url, redis.sentinels and redis.cluster is set');
  // Loaded here, by the first connection: a gateway without Redis never spends ioredis's memory.
  const { Redis: ServerClient, Cluster: ClusterClient } = require('ioredis') as typeof IORedis;
  const connectTimeout = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const common: IORedis.RedisOptions = {
    lazyConnect: true,
    connectionName: options.connectionName,
    connectTimeout,
    commandTimeout: config.command_timeout_ms,
    // How long a closing socket that never confirms its close may keep the process alive.
    disconnectTimeout: config.command_timeout_ms,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    // A command whose connection dropped is not sent again later: its caller has already been told
    // it failed (the command timeout), and a late resend would apply it behind the caller's back.
    autoResendUnfulfilledCommands: false,
    retryStrategy: reconnectDelay,
    // true: reconnect without resending the command that met it (its caller is told it failed).
    reconnectOnError: (error) => error.message.startsWith('READONLY'),
  };
  const redis: RedisClient =
    address.kind === 'cluster'
      ? new ClusterClient(
          address.nodes.map((node) => ({ ...node })),
          {
            lazyConnect: true,
            enableOfflineQueue: false,
            // Each round that finds no node answering waits this long before the next.
            clusterRetryStrategy: reconnectDelay,
            // MOVED and ASK are followed this many times per command; a command met by CLUSTERDOWN or
            // TRYAGAIN (a failover or a migration under way) is retried after this delay, within its timeout.
            maxRedirections: 16,
            retryDelayOnClusterDown: RECONNECT_STEP_MS,
            retryDelayOnTryAgain: RECONNECT_STEP_MS,
            retryDelayOnFailover: RECONNECT_STEP_MS,
            slotsRefreshTimeout: connectTimeout,
            redisOptions: nodeOptions(common, address.password),
          },
        )
      : address.kind === 'server'
      ? new ServerClient(address.url, common)
      : new ServerClient({
          ...common,
          sentinels: address.sentinels.map((sentinel) => ({ ...sentinel })),
          name: address.name,
          password: address.password,
          sentinelPassword: address.sentinelPassword,
          sentinelCommandTimeout: connectTimeout,
          // Each round over the Sentinels that finds no primary waits this long before the next.
          // (Without it the client gives up for good: ioredis ends a connection whose connector fails.)
          sentinelRetryStrategy: reconnectDelay,
          failoverDetector: true,
        });
  // Without a listener an 'error' event would crash the process.
  redis.on('error', (error: Error) => options.onError?.(error));
  // The first attempt has ended when it connects or fails; with Sentinels a failed round keeps
  // connect() pending (the next round is already scheduled) but says so with an 'error'.
  await new Promise<void>((resolve) => {
    redis.once('error', () => resolve());
    redis.connect().then(
      () => resolve(),
      () => resolve(),
    );
  });
  return redis;
}

/** A Cluster node's connection: the same bounds, less what the Cluster client sets for all its nodes. */
function nodeOptions(common: IORedis.RedisOptions, password: string | undefined): IORedis.ClusterOptions['redisOptions'] {
  const { lazyConnect: _lazy, retryStrategy: _retry, enableOfflineQueue: _queue, ...rest } = common;
  return { ...rest, password };
}

function reconnectDelay(attempt: number): number {
  return Math.min(attempt * RECONNECT_STEP_MS, RECONNECT_CAP_MS) + Math.floor(Math.random() * RECONNECT_STEP_MS);
}

/**
 * `name` as a hash tag on a Cluster (`{name}`), so every key built with it lands in one slot and one
 * script or multi-key command may touch them all; as it is elsewhere, so a single Redis keeps the key
 * names it always had.
 */
export function hashTag(redis: RedisClient, name: string): string {
  return redis.isCluster ? `{${name}}` : name;
}

/** The servers a scan must visit: every primary of a Cluster (each holds only its slots' keys), or the one server. */
function scanTargets(redis: RedisClient): Redis[] {
  return redis.isCluster ? (redis as Cluster).nodes('master') : [redis as Redis];
}

/** Every key matching `pattern`, from every primary; a key moved by a resharding under way may be seen twice, so they are deduplicated. */
export async function scanEveryPrimary(redis: RedisClient, pattern: string, count = 500): Promise<string[]> {
  const names = new Set<string>();
  for (const server of scanTargets(redis)) {
    let cursor = '0';
    do {
      const [next, batch] = await server.scan(cursor, 'MATCH', pattern, 'COUNT', count);
      cursor = next;
      for (const name of batch) names.add(name);
    } while (cursor !== '0');
  }
  return [...names];
}

/** Closes politely when Redis answers, at once when it does not. */
export async function closeRedis(redis: RedisClient): Promise<void> {
  if (redis.status === 'end') return;
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}
