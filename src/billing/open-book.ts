/**
 * Chooses the balance book: Redis when the config names one (`redis.url` or `redis.sentinels`: many
 * instances, one truth); the store's own tables when the store is shared (PostgreSQL without Redis, or
 * one SQLite file under several workers: `server.workers`); process memory in front of an embedded
 * store that one process serves.
 */
import type { Logger } from 'pino';
import type { GatewayConfig } from '../config/types';
import type { Store } from '../store/store';
import { inClusterWorker } from '../cluster/role';
import type { BalanceBook } from './book';
import { LocalBook } from './local-book';
import { openRedisBook } from './redis-book';
import { redisConfigured } from '../shared-state/redis';
import { StoreBook } from './store-book';

export async function openBook(config: GatewayConfig, store: Store, logger?: Logger): Promise<BalanceBook> {
  if (!redisConfigured(config.redis)) {
    // Workers of one server share an embedded store too: each holds through its rows, never its own memory.
    return store.shared || inClusterWorker() ? new StoreBook(store) : new LocalBook(store);
  }
  return openRedisBook(config.redis, store, { onError: (error) => logger?.warn({ err: error }, 'billing: Redis book') });
}
