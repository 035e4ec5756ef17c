/**
 * Chooses the balance book: Redis when `redis.url` is set (many instances, one truth); the store's
 * own tables when the store is shared (PostgreSQL without Redis); process memory in front of an
 * embedded store, which serves one instance.
 */
import type { Logger } from 'pino';
import type { GatewayConfig } from '../config/types';
import type { Store } from '../store/store';
import type { BalanceBook } from './book';
import type * as RedisBooks from './redis-book';
import { LocalBook } from './local-book';
import { StoreBook } from './store-book';

export async function openBook(config: GatewayConfig, store: Store, logger?: Logger): Promise<BalanceBook> {
  if (config.redis.url === '') return store.shared ? new StoreBook(store) : new LocalBook(store);
  // ioredis is loaded only when Redis is configured.
  const { openRedisBook } = require('./redis-book') as typeof RedisBooks;
  return openRedisBook(config.redis, store, { onError: (error) => logger?.warn({ err: error }, 'billing: Redis book') });
}
