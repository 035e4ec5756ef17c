/**
 * The SQLite store's writing thread (sqlite-background-writes.ts): its own connection to the store's
 * file, which writes the ledger writer's batches and every `checkpointMs` runs a PASSIVE checkpoint.
 * A batch's statements, its commit's WAL writes and a checkpoint's copy and fsync then block this
 * thread, never the request thread. The batch is written by the store's own ledger code
 * (`SqliteLedger.recordCharges`), so the rules are the ones an inline write follows.
 *
 * This thread may wait for a lock: nothing else runs on it, so where the request thread gives up
 * after a few ms and retries asynchronously (sqlite-busy.ts), this one waits up to BUSY_WAIT_MS inside
 * SQLite. A checkpoint that meets a lock is skipped: the next tick does it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { openSqlite } from './sqlite-driver';
import { SqliteLedger } from './sqlite-ledger';
import type { ChargeRecord } from './ledger-store';

export interface WriterThreadData {
  readonly filename: string;
  readonly checkpointMs: number;
}

/** A batch to write, numbered by the request thread; or `stop`. */
export type WriterThreadRequest = { readonly id: number; readonly charges: readonly ChargeRecord[] } | 'stop';

/** An error as it crosses the thread boundary: enough to rebuild what `isRefusedRecord` and `isBusy` read. */
export interface CarriedError {
  readonly name: string;
  readonly message: string;
  readonly code?: string;
  readonly errcode?: number;
}

export type WriterThreadMessage =
  | { readonly id: number; readonly recorded: number }
  | { readonly id: number; readonly error: CarriedError }
  | { readonly checkpointFailed: string };

/** As long as a store call on the request thread keeps trying (sqlite-busy.ts). */
const BUSY_WAIT_MS = 5000;

function carried(error: unknown): CarriedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const { code, errcode } = error as Error & { code?: unknown; errcode?: unknown };
  return {
    name: error.name,
    message: error.message,
    ...(typeof code === 'string' ? { code } : {}),
    ...(typeof errcode === 'number' ? { errcode } : {}),
  };
}

const { filename, checkpointMs } = workerData as WriterThreadData;
const db = openSqlite(filename);
db.exec(`PRAGMA busy_timeout = ${BUSY_WAIT_MS}`);
db.exec('PRAGMA synchronous = NORMAL');
db.exec('PRAGMA foreign_keys = ON');
// Checkpoints run on the timer below, never inside a batch's commit.
db.exec('PRAGMA wal_autocheckpoint = 0');
const ledger = new SqliteLedger(db);
// SQLite never calls the busy handler for a PASSIVE checkpoint: it does not wait, whatever busy_timeout says.
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');

function post(message: WriterThreadMessage): void {
  parentPort!.postMessage(message);
}

const timer = setInterval(() => {
  try {
    checkpoint.get();
  } catch (error) {
    if (!/busy|locked/i.test(String(error))) post({ checkpointFailed: String(error) });
  }
}, checkpointMs);

parentPort!.on('message', (request: WriterThreadRequest) => {
  if (request === 'stop') {
    // The connection closes here, so the store's own close is the file's last and cleans the WAL up.
    clearInterval(timer);
    db.close();
    parentPort!.close();
    return;
  }
  try {
    post({ id: request.id, recorded: ledger.recordCharges(request.charges) });
  } catch (error) {
    post({ id: request.id, error: carried(error) });
  }
});
