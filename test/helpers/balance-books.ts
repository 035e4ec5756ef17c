/**
 * The balance books, each over a fresh store (and Redis prefix): the in-process one (SQLite, one
 * instance), the store's rows (SQLite under workers, PostgreSQL without Redis) and Redis (two books
 * sharing one prefix, as two instances do: on one server, and on a Redis Cluster of the test's own). A setup answers why it cannot run (no PostgreSQL, no Redis)
 * instead.
 */
import { LocalBook } from '../../src/billing/local-book';
import { openRedisBook } from '../../src/billing/redis-book';
import { StoreBook } from '../../src/billing/store-book';
import type { BalanceBook } from '../../src/billing/book';
import { PostgresStore } from '../../src/store/postgres';
import { SqliteStore } from '../../src/store/sqlite';
import type { Store } from '../../src/store/store';
import { redisClusterProblem, startOwnCluster } from './redis-cluster';
import { createTestDatabase, postgresProblem, REDIS_URL, redisProblem, redisTestPrefix, type TestDatabase } from './services';

export interface Setup {
  readonly store: Store;
  /** Two books over the same state where the back end is shared (Redis, the store's rows); one otherwise. */
  readonly books: readonly BalanceBook[];
  close(): Promise<void>;
}

/** `prefix` names the Redis keys of the test that opens the book. */
export function bookSetups(prefix: string): Record<string, () => Promise<Setup | string>> {
  return {
    'LocalBook (SQLite, one instance)': async () => {
      const store = new SqliteStore(':memory:');
      await store.migrate();
      return { store, books: [new LocalBook(store)], close: () => store.close() };
    },
    'StoreBook (SQLite rows, workers)': async () => {
      const store = new SqliteStore(':memory:');
      await store.migrate();
      return { store, books: [new StoreBook(store)], close: () => store.close() };
    },
    'StoreBook (PostgreSQL, two instances)': async () => {
      const problem = await postgresProblem();
      if (problem !== null) return problem;
      const database: TestDatabase = await createTestDatabase();
      const stores = [new PostgresStore({ url: database.url } as never), new PostgresStore({ url: database.url } as never)];
      for (const store of stores) await store.migrate();
      return {
        store: stores[0],
        books: stores.map((store) => new StoreBook(store)),
        async close() {
          for (const store of stores) await store.close();
          await database.drop();
        },
      };
    },
    'RedisBook (two instances)': async () => {
      const problem = await redisProblem();
      if (problem !== null) return problem;
      const store = new SqliteStore(':memory:');
      await store.migrate();
      const redis = redisTestPrefix(prefix);
      const config = { url: REDIS_URL, key_prefix: redis.prefix, command_timeout_ms: 2000 };
      const books = [await openRedisBook(config, store), await openRedisBook(config, store)];
      return {
        store,
        books,
        async close() {
          for (const book of books) await book.close();
          await redis.clear();
          await store.close();
        },
      };
    },
    'RedisBook (Redis Cluster, two instances)': async () => {
      const problem = redisClusterProblem();
      if (problem !== null) return problem;
      const store = new SqliteStore(':memory:');
      await store.migrate();
      const cluster = await startOwnCluster();
      const config = { url: '', cluster: cluster.seeds, key_prefix: `${prefix}:`, command_timeout_ms: 2000 };
      const books = [await openRedisBook(config, store), await openRedisBook(config, store)];
      return {
        store,
        books,
        async close() {
          for (const book of books) await book.close();
          await cluster.close();
          await store.close();
        },
      };
    },
  };
}
