import { SqliteStore } from '../../src/store/sqlite';
import { describeStoreContract } from './contract';

describeStoreContract('store/sqlite (:memory:)', async () => {
  const store = new SqliteStore(':memory:');
  await store.migrate();
  return store;
});
