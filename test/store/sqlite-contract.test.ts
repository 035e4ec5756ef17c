import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { SqliteStore } from '../../src/store/sqlite';
import { writeInBackground } from '../../src/store/sqlite-background-writes';
import { describeStoreContract } from './contract';

describeStoreContract('store/sqlite (:memory:)', async () => {
  const store = new SqliteStore(':memory:');
  await store.migrate();
  return store;
});

// As a server runs it: a file, its ledger batches written on the store's writing thread.
let dir: string | null = null;
describeStoreContract(
  'store/sqlite (a file, batches on the writing thread)',
  async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-contract-'));
    const store = new SqliteStore(path.join(dir, 'tollgate.db'));
    await store.migrate();
    const writes = writeInBackground(store, pino({ level: 'silent' }));
    const close = store.close.bind(store);
    // The thread goes first, as in the gateway's close: the store's own close is then the file's last.
    store.close = async () => {
      await writes.stop();
      await close();
    };
    return store;
  },
  async () => {
    if (dir !== null) rmSync(dir, { recursive: true, force: true });
    dir = null;
  },
);
