/**
 * Redis with a local safety net (docs/faults.md#limiter-fallback, Kong's `fault_tolerant`): while Redis
 * answers, every decision is its script's; when a command fails or outlasts `command_timeout_ms`, the
 * request is decided by the in-process limiter (each instance enforcing its share of the limits) and
 * served. One warning line per outage, one line when it ends; `degraded` tells metrics which it is.
 */
import type { Logger } from 'pino';
import type { RedisConfig } from '../config/types';
import { closeRedis, connectRedis, redisConfigured } from '../shared-state/redis';
import type { Admission, Decision, LimitRequest, Limiter } from './limiter';
import { clusterSize, inClusterWorker } from '../cluster/role';
import { primaryChannel } from '../cluster/primary-channel';
import { ClusterLimiter } from './cluster';
import { LocalLimiter } from './local';
import { RedisLimiter } from './redis';

/** After a failure, requests skip Redis this long, so a blackholed Redis costs one timeout per period, not per request. */
const RETRY_AFTER_FAILURE_MS = 1000;

export class FallbackLimiter implements Limiter {
  private down = false;
  private skipUntil = 0;

  constructor(
    private readonly primary: RedisLimiter,
    private readonly fallback: LocalLimiter,
    private readonly logger: Logger,
  ) {}

  /** True while decisions are made locally because Redis is unreachable or slow. */
  get degraded(): boolean {
    return this.down;
  }

  async acquire(request: LimitRequest): Promise<Decision> {
    // Without a connection ioredis rejects at once (no offline queue); skipping it only spares a throw.
    if (this.primary.redis.status !== 'ready' || Date.now() < this.skipUntil) {
      this.markDown(new Error(`Redis connection is ${this.primary.redis.status}`));
      return this.fallback.acquire(request);
    }
    try {
      const decision = await this.primary.acquire(request);
      this.markUp();
      return decision;
    } catch (error) {
      this.skipUntil = Date.now() + RETRY_AFTER_FAILURE_MS;
      this.markDown(error);
      return this.fallback.acquire(request);
    }
  }

  async release(admission: Admission, actualTokens: number | null): Promise<void> {
    if (admission.backend === 'local') return this.fallback.release(admission, actualTokens);
    try {
      await this.primary.release(admission, actualTokens);
    } catch (error) {
      // The slot's lease and the window's TTL end it anyway; the reservation stays counted meanwhile.
      this.logger.debug({ err: error, requestId: admission.requestId }, 'rate-limit: releasing in Redis failed');
    }
  }

  async close(): Promise<void> {
    await this.fallback.close();
    await closeRedis(this.primary.redis);
  }

  private markDown(error: unknown): void {
    if (this.down) return;
    this.down = true;
    this.logger.warn({ err: error }, 'rate-limit: Redis unavailable, enforcing local limits on this instance until it answers again');
  }

  private markUp(): void {
    if (!this.down) return;
    this.down = false;
    this.logger.info('rate-limit: Redis answers again, limits are shared across instances');
  }
}

/**
 * The limiter for a config: in process without a Redis (neither `redis.url` nor `redis.sentinels`; in
 * the primary, for the workers of a server with `server.workers` > 1), Redis with a local fallback
 * otherwise.
 */
export async function openLimiter(
  redis: RedisConfig,
  options: { leaseMs: number; fallbackInstances: number },
  logger: Logger,
): Promise<LocalLimiter | FallbackLimiter | ClusterLimiter> {
  if (!redisConfigured(redis)) {
    // Workers of one server share the primary's counters; a lone process keeps its own.
    return inClusterWorker() ? new ClusterLimiter(primaryChannel(), clusterSize(), logger) : new LocalLimiter();
  }
  const client = await connectRedis(redis, {
    connectionName: 'tollgate-rate-limit',
    onError: (error) => logger.debug({ err: error }, 'rate-limit: Redis connection'),
  });
  const primary = new RedisLimiter(client, { prefix: redis.key_prefix, leaseMs: options.leaseMs });
  return new FallbackLimiter(primary, new LocalLimiter({ divisor: options.fallbackInstances }), logger);
}
