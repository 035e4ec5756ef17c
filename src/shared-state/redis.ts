/**
 * The one place a Redis client is made. ioredis's defaults suit a cache that may be slow, not a gateway
 * that must answer: unbounded offline queue, 20 retries per command, no command timeout, so a dead
 * Redis makes every request wait for seconds (docs/faults.md#g1). Every bound here is explicit, so a
 * caller sees a prompt error it can turn into a 503 or a fallback.
 */
import type * as IORedis from 'ioredis';
import type { Redis } from 'ioredis';
import type { RedisConfig } from '../config/types';

export interface RedisClientOptions {
  /** Shown in `CLIENT LIST`, to tell Tollgate's connections apart. */
  readonly connectionName?: string;
  /** Connection errors; ioredis emits them on every failed reconnect, so they are not thrown. */
  readonly onError?: (error: Error) => void;
  /** How long one connection attempt may take (a blackholed host never refuses). */
  readonly connectTimeoutMs?: number;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 2000;
/** Reconnect delays grow by this much per attempt, up to the cap, plus jitter so instances spread out. */
const RECONNECT_STEP_MS = 100;
const RECONNECT_CAP_MS = 2000;

/**
 * A client that fails fast: commands sent while disconnected reject at once (no offline queue), commands
 * sent on a connection that stops answering reject after `command_timeout_ms`, and it keeps
 * reconnecting in the background. Resolves once the first connection attempt has ended, whether or
 * not it succeeded, so a gateway starts (and reports itself unready) while Redis is down.
 */
export async function connectRedis(config: RedisConfig, options: RedisClientOptions = {}): Promise<Redis> {
  // Loaded here, by the first connection: a gateway without Redis never spends ioredis's memory.
  const { Redis: RedisClient } = require('ioredis') as typeof IORedis;
  const redis = new RedisClient(config.url, {
    lazyConnect: true,
    connectionName: options.connectionName,
    connectTimeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    commandTimeout: config.command_timeout_ms,
    // How long a closing socket that never confirms its close may keep the process alive.
    disconnectTimeout: config.command_timeout_ms,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    // A command whose connection dropped is not sent again later: its caller has already been told
    // it failed (the command timeout), and a late resend would apply it behind the caller's back.
    autoResendUnfulfilledCommands: false,
    retryStrategy: (attempt) => Math.min(attempt * RECONNECT_STEP_MS, RECONNECT_CAP_MS) + Math.floor(Math.random() * RECONNECT_STEP_MS),
  });
  // Without a listener an 'error' event would crash the process.
  redis.on('error', (error: Error) => options.onError?.(error));
  await redis.connect().catch(() => undefined);
  return redis;
}

/** Closes politely when Redis answers, at once when it does not. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'end') return;
  try {
    await redis.quit();
  } catch {
    redis.disconnect();
  }
}
