/**
 * Writes charges to the ledger in batches, off the request path: a request's charge is queued when it
 * ends and written with the others of the same window (at most `intervalMs` later, sooner when the
 * batch is full) in one store transaction. A store that is away keeps the batch, which is retried;
 * `close()` writes everything left, which is what makes SIGTERM lose no charge.
 *
 * A store that refuses a record (a value out of range, a constraint) gets the batch split until the
 * record is alone; that record is set aside (`Store.setAsideCharge`, with the error) and the rest is
 * written, so one bad record never stops every other account's charges.
 *
 * With an outbox (`src/outbox/outbox.ts`), each charge is appended to it as it is queued, and reported drained
 * once the store has it, so a kill -9 loses only what the outbox had not synced yet; records a
 * previous process left are queued again (`adopt`) and a record the store already holds is a no-op,
 * counted. Without one, what a kill -9 can lose is what is queued; `backlog()` tells the billing
 * plugin how much that is and how old, so it stops admitting paid requests past its bounds (see
 * `max_queued_*`).
 */
import type { Logger } from 'pino';
import { isRefusedRecord } from '../store/set-aside';
import type { ChargeRecord, LedgerStore } from '../store/ledger-store';
import type { AdoptedCharge } from './book';
import type { Outbox, OutboxEntry, ReplayedRecord } from '../outbox/outbox';

export interface LedgerWriterOptions {
  readonly intervalMs: number;
  readonly maxRecords: number;
  /** Called after each batch is written. */
  readonly onWritten?: (charges: readonly ChargeRecord[]) => void;
  /** Called for each charge the store refused, once it is set aside (or could not even be). */
  readonly onSetAside?: (charge: ChargeRecord, error: unknown) => void;
  /** Where each charge is appended before it is queued; absent: charges live in memory only. */
  readonly outbox?: Outbox;
  /** The balance book instance whose live numbers take these charges (Redis), kept with each record. */
  readonly instance?: string | null;
  /** Called with outbox records queued again (`adopt`), so the balance book counts them as queued. */
  readonly onAdopt?: (charges: readonly AdoptedCharge[]) => void;
  /** Called after a batch with charges from an earlier process: how many were new, how many the store had. */
  readonly onReplayed?: (written: number, alreadyRecorded: number) => void;
  /**
   * Runs each store write (`write`, which returns how many were new): a balance book that counts
   * unwritten charges marks them as being written first and drops them once it resolved (Redis).
   */
  readonly writeThrough?: (charges: readonly ChargeRecord[], write: () => Promise<number>) => Promise<number>;
}

/** What is waiting for the ledger. */
export interface Backlog {
  /** Charges queued or being written. */
  readonly charges: number;
  /** How long the oldest of them has waited, in ms (0 when none). */
  readonly oldestAgeMs: number;
}

/** Longest pause between retries while the store refuses writes. */
const MAX_RETRY_DELAY_MS = 1000;
/** Attempts `close()` makes before it reports what it could not write. */
const CLOSE_ATTEMPTS = 5;

interface Queued {
  readonly charge: ChargeRecord;
  /** performance.now() when it was queued. */
  readonly since: number;
  /** Its outbox record; null without an outbox. */
  readonly entry: OutboxEntry | null;
  /** Appended by an earlier process (or a writer since closed): the store may have it already. */
  readonly replayed: boolean;
  /** Its outbox record's instance, kept if it is handed over again. */
  readonly instance: string | null;
}

/** A charge row from an outbox record, or null when the record is not a charge this writer can write. */
function chargeOf(record: ReplayedRecord['record']): ChargeRecord | null {
  if (record.kind !== 'charge') return null;
  const row = record.row as Partial<ChargeRecord>;
  if (typeof row.requestId !== 'string' || typeof row.accountId !== 'string' || typeof row.cost !== 'bigint' || !(row.createdAt instanceof Date)) return null;
  return row as ChargeRecord;
}

export class LedgerWriter {
  private queue: Queued[] = [];
  /** The batch being written, kept so the backlog counts it. */
  private inFlight: readonly Queued[] = [];
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> | null = null;
  private failures = 0;
  private closed = false;
  private readonly drainer = (records: readonly ReplayedRecord[]): void => this.adopt(records);

  constructor(
    private readonly store: LedgerStore,
    private readonly options: LedgerWriterOptions,
    private readonly logger: Logger,
  ) {
    options.outbox?.addDrainer(this.drainer, store);
  }

  /** Charges queued or being written. */
  get pending(): number {
    return this.queue.length + this.inFlight.length;
  }

  backlog(now = performance.now()): Backlog {
    const oldest = this.inFlight[0] ?? this.queue[0];
    return { charges: this.pending, oldestAgeMs: oldest === undefined ? 0 : now - oldest.since };
  }

  /** The charges not written yet, for a book that must count them (reseeding, drift checks). */
  unwritten(): ChargeRecord[] {
    return [...this.inFlight, ...this.queue].map((entry) => entry.charge);
  }

  enqueue(charge: ChargeRecord): void {
    const instance = this.options.instance ?? null;
    const entry = this.options.outbox?.appendCharge(charge, instance) ?? null;
    this.queue.push({ charge, since: performance.now(), entry, replayed: false, instance });
    if (this.queue.length >= this.options.maxRecords) this.schedule(0);
    else this.schedule(this.options.intervalMs);
  }

  /**
   * Queues outbox records an earlier process (or a writer that closed) left, ahead of new charges:
   * each is written once, and one the store already holds changes nothing. A record that is not a
   * charge stays in the outbox, with an error line.
   */
  adopt(records: readonly ReplayedRecord[]): void {
    const now = performance.now();
    const adopted: Queued[] = [];
    for (const { entry, record } of records) {
      const charge = chargeOf(record);
      if (charge === null) {
        this.logger.error({ kind: record.kind, file: entry.segment.file }, 'ledger: an outbox record this version cannot write stays in the outbox');
        continue;
      }
      adopted.push({ charge, since: now, entry, replayed: true, instance: record.instance });
    }
    if (adopted.length === 0) return;
    this.options.onAdopt?.(adopted.map(({ charge, instance }) => ({ charge, instance })));
    this.queue = adopted.concat(this.queue);
    this.schedule(0);
  }

  /**
   * Writes everything queued now; resolves when the queue is empty and no write is under way, or a
   * write failed. A batch the timer started is waited for too: closing must not end the book's
   * connection under its Redis step (the SIGTERM drift of docs/ledger-faults.md#redis-comes-back).
   */
  async flush(): Promise<void> {
    if (this.writing !== null && !(await this.writing.then(() => true, () => false))) return;
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
    const outbox = this.options.outbox;
    if (outbox !== undefined) {
      const left = this.queue
        .filter((queued) => queued.entry !== null)
        .map(({ charge, entry, instance }) => ({ entry: entry!, record: { kind: 'charge', id: charge.requestId, instance, row: charge } }));
      this.queue = this.queue.filter((queued) => queued.entry === null);
      if (!outbox.handOver(this.drainer, left) && left.length > 0) {
        this.logger.warn({ charges: left.length, outbox: outbox.dir }, 'ledger: charges the store has not confirmed stay in the outbox; they are written at the next start');
      }
    }
    if (this.queue.length > 0) {
      this.logger.error(
        { lost: this.queue.length, requestIds: this.queue.map((entry) => entry.charge.requestId) },
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
    this.inFlight = batch;
    try {
      const left = await this.writeIsolating(batch);
      if (left.length > 0) {
        // Back to the front, in order: nothing is dropped because the store was briefly away.
        this.queue = left.concat(this.queue);
        this.failures += 1;
        throw new Error('the store is unavailable');
      }
      this.failures = 0;
    } finally {
      this.inFlight = [];
    }
  }

  /**
   * Writes `batch`, halving it around records the store refuses until each is alone and set aside.
   * Returns what is still to write when the store itself failed (unreachable, busy), so a retry never
   * reports a written charge twice.
   */
  private async writeIsolating(batch: readonly Queued[]): Promise<readonly Queued[]> {
    const charges = batch.map((entry) => entry.charge);
    try {
      const write = (): Promise<number> => this.store.recordCharges(charges);
      const recorded = await (this.options.writeThrough?.(charges, write) ?? write());
      this.drained(batch);
      const replayed = batch.reduce((count, queued) => (queued.replayed ? count + 1 : count), 0);
      // A new charge's request id is new to the store: only a replayed one can be there already.
      if (replayed > 0) this.options.onReplayed?.(replayed - (charges.length - recorded), charges.length - recorded);
      this.options.onWritten?.(charges);
      return [];
    } catch (error) {
      if (!isRefusedRecord(error)) {
        this.logger.warn({ err: error, pending: this.pending }, 'ledger: writing charges failed; retrying');
        return batch;
      }
      if (batch.length === 1) {
        if (!(await this.setAside(batch[0].charge, error))) return batch;
        this.drained(batch);
        return [];
      }
      const half = Math.ceil(batch.length / 2);
      const first = await this.writeIsolating(batch.slice(0, half));
      if (first.length > 0) return first.concat(batch.slice(half));
      return this.writeIsolating(batch.slice(half));
    }
  }

  private drained(batch: readonly Queued[]): void {
    const entries = batch.flatMap((queued) => (queued.entry === null ? [] : [queued.entry]));
    if (entries.length > 0) this.options.outbox?.drained(entries);
  }

  /**
   * Keeps a refused charge in the store's set-aside table; logs it whole when the table refuses it too.
   * False when the store could not be reached meanwhile: the charge stays queued.
   */
  private async setAside(charge: ChargeRecord, refusal: unknown): Promise<boolean> {
    const reason = refusal instanceof Error ? refusal.message : String(refusal);
    try {
      await this.store.setAsideCharge(charge, reason);
      this.logger.error(
        { err: refusal, requestId: charge.requestId, accountId: charge.accountId },
        'ledger: the store refused this charge; it is set aside (set_aside_charges) and its hold expires',
      );
    } catch (error) {
      if (!isRefusedRecord(error)) return false;
      this.logger.error(
        { err: error, refusal: reason, charge: { ...charge, cost: String(charge.cost), held: String(charge.held), overage: String(charge.overage), unbilled: String(charge.unbilled) } },
        'ledger: the store refused this charge and could not set it aside; it is only in this log line',
      );
    }
    this.options.onSetAside?.(charge, refusal);
    return true;
  }
}
