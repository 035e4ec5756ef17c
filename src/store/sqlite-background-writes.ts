/**
 * The SQLite store's slow writes off the request thread. better-sqlite3 is synchronous, so a ledger
 * batch (its statements, and the WAL writes of its commit) and a WAL checkpoint (the copy into the
 * database file and its fsync; SQLite runs one inside the commit that takes the WAL past 1,000 pages)
 * would each block every request in flight: each batch costs the request thread its statements and
 * its commit's WAL writes (docs/benchmarks.md has the figures). A server hands both to a
 * thread with its own connection (sqlite-writer-thread.ts): the store sends each batch there and its
 * own commits no longer checkpoint.
 *
 * A charge crosses as a structured clone, a fraction of its write's cost. Should the thread fail to
 * start or die, batches it had not answered are rejected as a store failure (the ledger writer keeps
 * them and tries again; a batch the thread had committed is then a no-op, request ids being unique),
 * and the store writes and checkpoints on its own connection again: nothing waits on a thread that is
 * gone, and the WAL never grows without bound. CLI commands keep SQLite's own way (short, small writes).
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { ChargeRecord } from './ledger-store';
import type { CarriedError, WriterThreadData, WriterThreadMessage, WriterThreadRequest } from './sqlite-writer-thread';

/**
 * Often enough that the WAL stays near the size SQLite's own threshold keeps it (a few MB under load),
 * seldom enough that the WAL restarts no more often than before: the first commit after a complete
 * checkpoint rewrites the WAL's header and fsyncs it.
 */
const CHECKPOINT_INTERVAL_MS = 1000;

/**
 * The thread's garbage is a batch's clone and its statements' parameters: a young generation of a few
 * MiB holds a large batch; V8's default (up to 16 MiB a semi-space) would only be resident memory.
 */
const WRITER_THREAD_LIMITS = { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 32 };

/** Writes a batch of charges somewhere else than the store's own connection; resolves to how many were new. */
export type ChargeBatchWriter = (charges: readonly ChargeRecord[]) => Promise<number>;

/** The store whose slow writes are handed over: taken over while the thread runs, given back after. */
export interface BackgroundWritable {
  readonly filename: string;
  autoCheckpoint(on: boolean): void;
  writeChargesWith(writer: ChargeBatchWriter | null): void;
}

export interface BackgroundWrites {
  /** Waits for the batches sent, stops the thread (its connection closed) and gives the writes back. */
  stop(): Promise<void>;
}

/** The error a thread's write ended in, as the request thread's checks read it (`isRefusedRecord`, `isBusy`). */
function rebuilt(carried: CarriedError): Error {
  const error = carried.name === 'RangeError' ? new RangeError(carried.message) : carried.name === 'TypeError' ? new TypeError(carried.message) : new Error(carried.message);
  if (carried.code !== undefined) Object.assign(error, { code: carried.code });
  if (carried.errcode !== undefined) Object.assign(error, { errcode: carried.errcode });
  return error;
}

interface Waiting {
  readonly resolve: (recorded: number) => void;
  readonly reject: (error: Error) => void;
}

export function writeInBackground(store: BackgroundWritable, logger: Logger, checkpointMs = CHECKPOINT_INTERVAL_MS): BackgroundWrites {
  const data: WriterThreadData = { filename: store.filename, checkpointMs };
  const worker = new Worker(path.join(__dirname, 'sqlite-writer-thread.js'), { workerData: data, resourceLimits: WRITER_THREAD_LIMITS });
  // A server that forgets to stop it still exits; while a batch is out, the thread keeps the process up.
  worker.unref();
  const waiting = new Map<number, Waiting>();
  let nextId = 1;
  let running = true;

  const send: ChargeBatchWriter = (charges) =>
    new Promise<number>((resolve, reject) => {
      const id = nextId++;
      if (waiting.size === 0) worker.ref();
      waiting.set(id, { resolve, reject });
      worker.postMessage({ id, charges } satisfies WriterThreadRequest);
    });

  const answered = (id: number): Waiting | undefined => {
    const found = waiting.get(id);
    waiting.delete(id);
    if (waiting.size === 0) worker.unref();
    return found;
  };

  const giveBack = (why: string | null) => {
    if (!running) return;
    running = false;
    store.writeChargesWith(null);
    store.autoCheckpoint(true);
    for (const { reject } of waiting.values()) reject(new Error(`the store's writing thread stopped before answering (${why ?? 'stopped'})`));
    waiting.clear();
  };

  worker.on('message', (message: WriterThreadMessage) => {
    if ('checkpointFailed' in message) {
      logger.warn({ error: message.checkpointFailed }, 'store: a background WAL checkpoint failed; the next one tries again');
      return;
    }
    const found = answered(message.id);
    if ('recorded' in message) found?.resolve(message.recorded);
    else found?.reject(rebuilt(message.error));
  });
  worker.on('error', (error) => {
    logger.warn({ err: error }, "store: the store's writing thread failed; ledger batches and WAL checkpoints run on the request thread again");
    giveBack(error.message);
  });
  worker.on('exit', (code) => giveBack(`exit code ${code}`));
  store.autoCheckpoint(false);
  store.writeChargesWith(send);
  return {
    async stop() {
      if (!running) return;
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      // After every batch already sent: the thread answers those first, in order.
      worker.postMessage('stop' satisfies WriterThreadRequest);
      await exited;
    },
  };
}
