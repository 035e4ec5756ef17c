/**
 * Writes charges to the ledger in batches, off the request path: a request's charge is queued when it
 * ends and written with the others of the same window (at most `intervalMs` later, sooner when the
 * batch is full) in one store transaction. A failed write keeps the batch and retries; `close()`
 * writes everything left, which is what makes SIGTERM lose no charge. What a kill -9 can lose is the
 * queue of the last window; those requests' holds then expire and the sweeper releases them.
 */
import type { Logger } from 'pino';
import type { ChargeRecord, Store } from '../store/store';

export interface LedgerWriterOptions {
  readonly intervalMs: number;
  readonly maxRecords: number;
  /** Called after each batch is written. */
  readonly onWritten?: (charges: readonly ChargeRecord[]) => void;
}

/** Longest pause between retries while the store refuses writes. */
const MAX_RETRY_DELAY_MS = 1000;
/** Attempts `close()` makes before it reports what it could not write. */
const CLOSE_ATTEMPTS = 5;

export class LedgerWriter {
  private queue: ChargeRecord[] = [];
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> | null = null;
  private failures = 0;
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly options: LedgerWriterOptions,
    private readonly logger: Logger,
  ) {}

  /** Charges queued or being written. */
  get pending(): number {
    return this.queue.length;
  }

  enqueue(charge: ChargeRecord): void {
    this.queue.push(charge);
    if (this.queue.length >= this.options.maxRecords) this.schedule(0);
    else this.schedule(this.options.intervalMs);
  }

  /** Writes everything queued now; resolves when the queue is empty or a write failed. */
  async flush(): Promise<void> {
    while (this.queue.length > 0) {
      this.writing ??= this.writeBatch().finally(() => (this.writing = null));
      const ok = await this.writing.then(() => true, () => false);
      if (!ok) return;
    }
  }

  /** Stops the timer and writes what is left, retrying a few times before giving up loudly. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    for (let attempt = 1; attempt <= CLOSE_ATTEMPTS && this.queue.length > 0; attempt++) {
      await this.flush();
      if (this.queue.length > 0) await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
    if (this.queue.length > 0) {
      this.logger.error(
        { lost: this.queue.length, requestIds: this.queue.map((charge) => charge.requestId) },
        'ledger: charges could not be written before shutdown; their holds will be released by the sweeper',
      );
    }
  }

  private schedule(delayMs: number): void {
    if (this.closed || (this.timer !== null && delayMs > 0)) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush().then(() => {
        if (this.queue.length > 0) this.schedule(this.retryDelay());
      });
    }, delayMs);
  }

  private retryDelay(): number {
    return Math.min(MAX_RETRY_DELAY_MS, this.options.intervalMs * 2 ** this.failures);
  }

  private async writeBatch(): Promise<void> {
    const batch = this.queue.splice(0, this.options.maxRecords);
    try {
      await this.store.recordCharges(batch);
      this.failures = 0;
      this.options.onWritten?.(batch);
    } catch (error) {
      // Back to the front, in order: nothing is dropped because the store was briefly away.
      this.queue = batch.concat(this.queue);
      this.failures += 1;
      this.logger.warn({ err: error, pending: this.queue.length }, 'ledger: writing charges failed; retrying');
      throw error;
    }
  }
}
