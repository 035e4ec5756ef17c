/**
 * The WAL checkpointer's thread (sqlite-checkpoints.ts): its own connection to the store's file, and
 * every `intervalMs` a PASSIVE checkpoint, which copies what the WAL holds into the database file
 * without waiting for any reader or writer and takes no lock a request needs. The copy, and the fsync
 * of the database file that ends it, then block this thread, never the request thread. A checkpoint
 * another connection is running (SQLITE_BUSY) is skipped: the next tick does it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openSqlite } from './sqlite-driver';

export interface CheckpointThreadData {
  readonly filename: string;
  readonly intervalMs: number;
}

/** What the thread tells the store's thread: a checkpoint failed for another reason than a busy lock. */
export interface CheckpointThreadMessage {
  readonly failed: string;
}

const { filename, intervalMs } = workerData as CheckpointThreadData;
const db = openSqlite(filename);
// Never waits for a lock: a busy checkpoint is left to the next tick.
db.exec('PRAGMA busy_timeout = 0');
// This connection writes nothing, so it never checkpoints on its own; only the statement below does.
db.exec('PRAGMA wal_autocheckpoint = 0');
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');

const timer = setInterval(() => {
  try {
    checkpoint.get();
  } catch (error) {
    if (!/busy|locked/i.test(String(error))) parentPort!.postMessage({ failed: String(error) } satisfies CheckpointThreadMessage);
  }
}, intervalMs);

// `stop`: the connection closes here, so the store's own close is the file's last and cleans the WAL up.
parentPort!.once('message', () => {
  clearInterval(timer);
  db.close();
  parentPort!.close();
});
