/**
 * WAL checkpoints off the request thread. SQLite's own checkpoint runs inside the commit that takes the
 * WAL past 1,000 pages: the ledger batch that happens to cross it copies the WAL into the database file
 * and fsyncs it on the event loop, a block of tens of ms on a loaded disk that every request then in
 * flight waits out (the bench's loop-block figure). A server hands them to a thread of their own
 * (sqlite-checkpoint-thread.ts): its connection's commits no longer checkpoint, the thread does, on a
 * timer. Should the thread fail to start or die, the connection checkpoints itself again, so the WAL
 * never grows without bound. CLI commands keep SQLite's own (they are short and write little).
 */
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { CheckpointThreadData, CheckpointThreadMessage } from './sqlite-checkpoint-thread';

/**
 * Often enough that the WAL stays near the size SQLite's own threshold keeps it (a few MB under load),
 * seldom enough that the WAL restarts no more often than before: the first commit after a complete
 * checkpoint rewrites the WAL's header and fsyncs it, on the request thread.
 */
const CHECKPOINT_INTERVAL_MS = 1000;

/**
 * The thread runs one statement a second and allocates next to nothing: V8's default young generation
 * (up to 16 MiB a semi-space) would only be room it never needs (the outbox syncer's limits, likewise).
 */
const CHECKPOINT_THREAD_LIMITS = { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 };

/** The connection whose checkpoints are handed over: turned off while the thread runs, back on after. */
export interface CheckpointingConnection {
  readonly filename: string;
  autoCheckpoint(on: boolean): void;
}

export interface BackgroundCheckpoints {
  /** Stops the thread (its connection closed) and gives the checkpoints back to the connection. */
  stop(): Promise<void>;
}

export function checkpointInBackground(store: CheckpointingConnection, logger: Logger, intervalMs = CHECKPOINT_INTERVAL_MS): BackgroundCheckpoints {
  const data: CheckpointThreadData = { filename: store.filename, intervalMs };
  const worker = new Worker(path.join(__dirname, 'sqlite-checkpoint-thread.js'), { workerData: data, resourceLimits: CHECKPOINT_THREAD_LIMITS });
  // A server that forgets to stop it still exits.
  worker.unref();
  let running = true;
  const giveBack = () => {
    if (!running) return;
    running = false;
    store.autoCheckpoint(true);
  };
  worker.on('message', (message: CheckpointThreadMessage) => logger.warn({ error: message.failed }, 'store: a background WAL checkpoint failed; the next one tries again'));
  worker.on('error', (error) => {
    logger.warn({ err: error }, 'store: the WAL checkpoint thread failed; commits checkpoint the WAL themselves again');
    giveBack();
  });
  worker.on('exit', giveBack);
  store.autoCheckpoint(false);
  return {
    async stop() {
      if (!running) return;
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      worker.postMessage('stop');
      await exited;
    },
  };
}
