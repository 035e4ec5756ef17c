/**
 * The sizes of replies and conversations Tollgate relayed, so a request that references one
 * (`previous_response_id`, `conversation`) holds what the upstream will bill for it again: the
 * referenced input and output, not the few bytes of the follow-up's body. Bounded in memory on one
 * instance; in Redis, with the provider's retention as expiry, where several instances share the work.
 * An id neither remembers is unknown, and the hold takes the model's whole context window instead.
 */
import type { Logger } from 'pino';
import type { GatewayConfig } from '../config/types';
import { closeRedis, connectRedis, redisConfigured, type RedisClient } from '../shared-state/redis';

export interface ReplySizes {
  /** The remembered tokens of each id, summed; null when any id is unknown. */
  total(ids: readonly string[]): Promise<number | null>;
  /** Remembers what a reply (or a conversation after it) weighs in tokens. Never throws. */
  remember(id: string, tokens: number): void;
}

/** Ids remembered by one instance; the oldest is forgotten first. */
const LOCAL_CAPACITY = 100_000;
/** OpenAI keeps stored responses for 30 days; a reference to an older one fails upstream anyway. */
const RETENTION_S = 30 * 24 * 3600;

class LocalReplySizes implements ReplySizes {
  private readonly sizes = new Map<string, number>();

  constructor(private readonly capacity = LOCAL_CAPACITY) {}

  async total(ids: readonly string[]): Promise<number | null> {
    let sum = 0;
    for (const id of ids) {
      const size = this.sizes.get(id);
      if (size === undefined) return null;
      sum += size;
    }
    return sum;
  }

  remember(id: string, tokens: number): void {
    this.sizes.delete(id);
    this.sizes.set(id, tokens);
    if (this.sizes.size > this.capacity) this.sizes.delete(this.sizes.keys().next().value as string);
  }
}

class RedisReplySizes implements ReplySizes {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly onError: (error: unknown) => void,
  ) {}

  async total(ids: readonly string[]): Promise<number | null> {
    if (ids.length === 0) return 0;
    // Redis unreachable: the reference is treated as unknown, which holds more, never less.
    const keys = ids.map((id) => this.key(id));
    // On a Cluster the ids' keys lie in many slots, which one MGET may not span.
    const read = this.redis.isCluster ? Promise.all(keys.map((key) => this.redis.get(key))) : this.redis.mget(keys);
    const values = await read.catch((error: unknown) => (this.onError(error), null));
    if (values === null || values.some((value) => value === null)) return null;
    return values.reduce((sum, value) => sum + Number(value), 0);
  }

  remember(id: string, tokens: number): void {
    this.redis.set(this.key(id), String(tokens), 'EX', RETENTION_S).catch(this.onError);
  }

  private key(id: string): string {
    return `${this.prefix}reply-size:${id}`;
  }
}

/** Redis when the gateway shares state through it (a reply relayed by one instance is referenced on another); else memory. */
export async function openReplySizes(config: GatewayConfig, logger: Logger): Promise<ReplySizes & { close?(): Promise<void> }> {
  if (!redisConfigured(config.redis)) return new LocalReplySizes();
  const redis = await connectRedis(config.redis, {
    connectionName: 'tollgate-reply-sizes',
    onError: (error) => logger.warn({ err: error }, 'billing: reply sizes in Redis'),
  });
  const sizes = new RedisReplySizes(redis, config.redis.key_prefix, (error) => logger.warn({ err: error }, 'billing: reply sizes in Redis'));
  return Object.assign(sizes, { close: () => closeRedis(redis) });
}
