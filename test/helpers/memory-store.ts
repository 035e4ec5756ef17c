/** A fresh, migrated in-memory SQLite store for each test of the enclosing describe block. */
import { SqliteStore } from '../../src/store/sqlite';

/** Registers beforeEach/afterEach hooks; call the returned function inside a test to get the store. */
export function useMemoryStore(): () => SqliteStore {
  let store: SqliteStore | null = null;
  beforeEach(async () => {
    store = new SqliteStore(':memory:');
    await store.migrate();
  });
  afterEach(async () => {
    await store?.close();
    store = null;
  });
  return () => {
    if (store === null) throw new Error('useMemoryStore(): the store exists only inside a test');
    return store;
  };
}
