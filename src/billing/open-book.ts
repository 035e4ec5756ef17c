/** Chooses the balance book for a config: Redis when `redis.url` is set, the store's tables otherwise. */
import type { Logger } from 'pino';
import type { GatewayConfig } from '../config/types';
import type { Store } from '../store/store';
import type { BalanceBook } from './book';
import { openRedisBook } from './redis-book';
import { StoreBook } from './store-book';

export async function openBook(config: GatewayConfig, store: Store, logger?: Logger): Promise<BalanceBook> {
  if (config.redis.url === '') return new StoreBook(store);
  return openRedisBook(config.redis, store, { onError: (error) => logger?.warn({ err: error }, 'billing: Redis book') });
}
