/**
 * A per-instance, append-only outbox on local disk for ledger writes the store has not confirmed
 * yet. A settled charge is appended before it is queued for the store: on the request path that is an
 * encode into a reused buffer (`record-format.ts`: a short binary record, no key names) and a copy
 * into a ring shared with a syncing thread (`syncer.ts`), no allocation or I/O per charge. The
 * syncer writes and `fdatasync`s in groups on its own clock (one writev per group, about `syncMs` after
 * the group's first record, sooner once it reaches GROUP_BYTES), so a kill -9 loses only what was
 * appended since the last sync, however busy the request thread is.
 *
 * Records go to numbered segment files in the outbox's folder. The ledger writer reports each record
 * it has written to the store (`drained`); their ids go into the outbox as one `drained` record, so a
 * restart skips them, and a segment is deleted once every record in it is drained and no more go into
 * it. A segment is closed for appends when it reaches ROTATE_BYTES, or once all it holds is drained
 * (at most once a second). What a restart replays that the store already has is then at most the
 * drains of the last group, each a no-op there.
 *
 * At open, the segments a previous process left are read (`takeReplay`); a record cut short or
 * damaged is skipped with an error line naming the file and offset, never a refusal to start. New
 * records always go to a new segment, so a torn tail is never written after.
 *
 * One process per folder (`folder-lock.ts`); a second process given the same path takes a sibling
 * folder, and within a process the outbox is shared by reference count (`shared-outboxes.ts`).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { makePrivateDir } from '../private-files';
import { unlink } from 'node:fs/promises';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import type { ChargePrices, ChargeRecord } from '../store/store';
import { lock, unlock } from './folder-lock';
import { encodeRecord, RecordEncoder } from './record-encoder';
import type { OutboxRecord } from './record-format';
import { readRecords } from './record-reader';
import {
  CLOSING,
  CONTROL_SLOTS,
  DURABLE,
  HEAD,
  IDLE,
  KICK,
  RING_BYTES,
  RING_MASK,
  segmentName,
  SWITCH,
  SWITCH_BYTES,
  SYNCS,
  WANT,
  type SyncerData,
  type SyncerMessage,
} from './ring';

/** A group is synced at once when it reaches this size, without waiting for its time. */
const GROUP_BYTES = 256 * 1024;
const ROTATE_BYTES = 4 * 1024 * 1024;
/** A drained segment below ROTATE_BYTES is closed at most this often. */
const ROTATE_IDLE_MS = 1000;
/** After a failed write or sync, the next attempt waits this long. */
const RETRY_MS = 100;
const SEGMENT = /^(\d{10})\.log$/;
/** The syncing thread allocates next to nothing: a small heap keeps its memory small. */
const SYNCER_LIMITS = { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 };
/** A record naming ids the store has confirmed; never replayed itself. */
const DRAINED = 'drained';

export interface OutboxOptions {
  /** About the longest a record waits for its group's fdatasync. */
  readonly syncMs: number;
  readonly logger: Logger;
  /**
   * Told after each group: how many bytes (`appendedBytes`) are now on disk, when (epoch ms), how long
   * its write and fdatasync took (ms), how many fdatasync calls it made and how late the syncer woke for
   * it (ms: what the machine's scheduler added).
   */
  readonly onSynced?: (durableBytes: number, at: number, ms: number, syncs: number, late: number) => void;
}

/** Where a record was appended; handed back to `drained` once the store has it. */
export interface OutboxEntry {
  readonly segment: Segment;
  readonly bytes: number;
  readonly id: string;
}

/** A record found at open, not known to be in the store. */
export interface ReplayedRecord {
  readonly entry: OutboxEntry;
  readonly record: OutboxRecord;
}

/** Receives records a closing ledger writer could not write, so another drains them (config reload). */
export type Drainer = (records: readonly ReplayedRecord[]) => void;

class Segment {
  records = 0;
  drained = 0;
  /** Record bytes appended to it. */
  bytes = 0;
  /** No more records go here. */
  sealed = false;
  removed = false;
  /** The outbox's byte count once the syncer is past it (set when sealed); a segment from an earlier process: 0. */
  end = Number.POSITIVE_INFINITY;
  /** Price snapshots already in this segment, by number. */
  readonly prices = new Set<number>();

  constructor(
    readonly id: number,
    readonly file: string,
  ) {}

  get drainedAll(): boolean {
    return this.sealed && this.drained >= this.records;
  }
}

export class Outbox {
  private readonly segments: Segment[] = [];
  private current: Segment;
  private replay: ReplayedRecord[] | null;
  private undrained = 0;
  private failure: Error | null = null;
  private lastRotation = performance.now();
  private rotationTimer: NodeJS.Timeout | null = null;
  private readonly waiters: { target: number; resolve: () => void }[] = [];
  private readonly drainers: { drainer: Drainer; owner: object }[] = [];
  private closed = false;
  private readonly control = new Int32Array(new SharedArrayBuffer(CONTROL_SLOTS * 4));
  private readonly ring = Buffer.from(new SharedArrayBuffer(RING_BYTES));
  private readonly syncer: Worker;
  private readonly exited: Promise<void>;
  private readonly online: Promise<void>;
  /** Bytes put in the ring since open. */
  private head = 0;
  /** Records the ring had no room for (the disk is behind), in order, until it has. */
  private overflow: Buffer[] = [];
  private overflowBytes = 0;
  private readonly encoder = new RecordEncoder();
  private readonly priceIds = new WeakMap<ChargePrices, number>();
  private nextPriceId = 1;

  private constructor(
    readonly dir: string,
    private readonly options: OutboxOptions,
  ) {
    makePrivateDir(dir);
    lock(dir);
    const ids: number[] = [];
    for (const name of readdirSync(dir)) {
      const match = SEGMENT.exec(name);
      if (match !== null) ids.push(Number(match[1]));
    }
    ids.sort((a, b) => a - b);
    this.replay = [];
    const drained = new Set<string>();
    const found = ids.map((id) => this.readSegment(id, drained));
    for (const [segment, records] of found) {
      for (const replayed of records) {
        if (drained.has(replayed.record.id)) {
          segment.drained += 1;
        } else {
          this.undrained += replayed.entry.bytes;
          this.replay.push(replayed);
        }
      }
      this.segments.push(segment);
    }
    const first = (ids.at(-1) ?? 0) + 1;
    this.current = new Segment(first, path.join(dir, segmentName(first)));
    this.segments.push(this.current);
    while (this.segments[0].drainedAll) void this.removeNow(this.segments[0]);
    const workerData: SyncerData = {
      control: this.control.buffer,
      ring: this.ring.buffer,
      dir,
      firstSegment: first,
      syncMs: options.syncMs,
      groupBytes: GROUP_BYTES,
      retryMs: RETRY_MS,
    };
    this.syncer = new Worker(path.join(__dirname, 'syncer.js'), { workerData, resourceLimits: SYNCER_LIMITS });
    this.syncer.on('message', (message: SyncerMessage) => this.heard(message));
    this.exited = new Promise((resolve) => this.syncer.once('exit', () => resolve()));
    this.online = new Promise((resolve) => {
      this.syncer.once('online', () => resolve());
      this.syncer.once('exit', () => resolve());
    });
    this.syncer.on('error', (error) => this.failed(error));
    // Referenced while it starts and while someone waits for a sync (`synced`, `close`): shutdown closes the outbox.
    this.syncer.once('online', () => this.waiters.length === 0 && !this.closed && this.syncer.unref());
    if (options.onSynced !== undefined) Atomics.store(this.control, WANT, 1);
  }

  /** Opens (creating) the outbox in `dir`; see the file comment for what a second process gets. */
  static open(dir: string, options: OutboxOptions): Outbox {
    return new Outbox(dir, options);
  }

  /** Resolves once the syncing thread runs: records appended before wait for it to start. */
  started(): Promise<void> {
    return this.online;
  }

  /** What a previous process left and the store may not have, oldest first; given out once. */
  takeReplay(): ReplayedRecord[] {
    const replay = this.replay ?? [];
    this.replay = null;
    return replay;
  }

  /** Bytes of records the store has not confirmed. */
  get undrainedBytes(): number {
    return this.undrained;
  }

  /** Bytes appended since open (what `onSynced` counts on disk). */
  get appendedBytes(): number {
    return this.head + this.overflowBytes;
  }

  /** fdatasync calls made since open. */
  get fdatasyncCalls(): number {
    return Atomics.load(this.control, SYNCS);
  }

  /** The last write or sync failed (and has not succeeded since): records may not be durable. */
  get writeError(): Error | null {
    return this.failure;
  }

  /** Appends a charge, in the compact form. */
  appendCharge(charge: ChargeRecord, instance: string | null): OutboxEntry {
    if (this.closed) throw new Error('the outbox is closed');
    if (this.current.bytes >= ROTATE_BYTES) this.rotate();
    let pricesId = 0;
    if (charge.prices !== null) {
      pricesId = this.priceIds.get(charge.prices) ?? 0;
      if (pricesId === 0) this.priceIds.set(charge.prices, (pricesId = this.nextPriceId++));
      if (!this.current.prices.has(pricesId)) {
        this.push(this.encoder.prices(pricesId, charge.prices));
        this.current.prices.add(pricesId);
      }
    }
    return this.appended(this.push(this.encoder.charge(charge, instance, pricesId)), charge.requestId);
  }

  /** Appends any other ledger write, as JSON. */
  append(record: OutboxRecord): OutboxEntry {
    if (this.closed) throw new Error('the outbox is closed');
    if (this.current.bytes >= ROTATE_BYTES) this.rotate();
    return this.appended(this.push(encodeRecord(record)), record.id);
  }

  private appended(bytes: number, id: string): OutboxEntry {
    this.current.records += 1;
    this.undrained += bytes;
    return { segment: this.current, bytes, id };
  }

  /** The store has these records: a restart skips them, and their segments may go. */
  drained(entries: readonly OutboxEntry[]): void {
    if (entries.length === 0) return;
    const ids: string[] = [];
    for (const { segment, bytes, id } of entries) {
      segment.drained += 1;
      this.undrained -= bytes;
      ids.push(id);
    }
    if (!this.closed) this.push(this.encoder.drained(ids));
    this.rotateIfDrained();
    void this.removeDone();
  }

  /** Puts a record's bytes in the ring (or, while it is full, in line for it); returns their count. */
  private push(record: Buffer): number {
    this.current.bytes += record.length;
    if (this.overflow.length > 0 || !this.put(record)) this.queue(Buffer.from(record));
    return record.length;
  }

  /** Waits for room in the ring: the syncer says when it has written some. */
  private queue(record: Buffer): void {
    this.overflow.push(record);
    this.overflowBytes += record.length;
    this.want();
  }

  private want(): void {
    Atomics.store(this.control, WANT, 1);
  }

  /** What the syncer has on disk, in bytes since open. */
  private get durable(): number {
    return this.head - (((this.head | 0) - Atomics.load(this.control, DURABLE)) | 0);
  }

  /** Copies into the ring and tells the syncer; false when there is no room. */
  private put(bytes: Buffer): boolean {
    const length = bytes.length;
    const pending = (this.head - Atomics.load(this.control, DURABLE)) | 0;
    if (pending + length > RING_BYTES) return false;
    const start = this.head & RING_MASK;
    const first = Math.min(length, RING_BYTES - start);
    bytes.copy(this.ring, start, 0, first);
    if (first < length) bytes.copy(this.ring, 0, first, length);
    this.head += length;
    Atomics.store(this.control, HEAD, this.head | 0);
    if (Atomics.load(this.control, IDLE) === 1) Atomics.notify(this.control, HEAD);
    if (pending < GROUP_BYTES && pending + length >= GROUP_BYTES) {
      Atomics.add(this.control, KICK, 1);
      Atomics.notify(this.control, KICK);
    }
    return true;
  }

  private heard(message: SyncerMessage): void {
    if (message.type === 'failed') {
      this.failed(Object.assign(new Error(message.message), { code: message.code }));
      return;
    }
    if (this.failure !== null) {
      this.options.logger.info({ dir: this.dir }, 'outbox: writing to the outbox works again');
      this.failure = null;
    }
    while (this.overflow.length > 0 && this.put(this.overflow[0])) this.overflowBytes -= this.overflow.shift()!.length;
    this.resolveWaiters();
    const durable = this.head - (((this.head | 0) - message.durable) | 0);
    this.options.onSynced?.(durable, message.at, message.ms, message.syncs, message.late);
    if (this.waiters.length === 0 && this.overflow.length === 0 && !this.closed) {
      this.syncer.unref();
      if (this.options.onSynced === undefined) Atomics.store(this.control, WANT, 0);
    }
    this.rotateIfDrained();
    void this.removeDone();
  }

  /** Resolves once everything appended so far is durable (or a write failed). */
  synced(): Promise<void> {
    const target = this.appendedBytes;
    if (this.durable >= target || this.failure !== null) return Promise.resolve();
    this.want();
    this.syncer.ref();
    const waiting = new Promise<void>((resolve) => this.waiters.push({ target, resolve }));
    // Synced between the check and saying it is wanted: no message would come.
    if (this.durable >= target) this.resolveWaiters();
    return waiting;
  }

  private resolveWaiters(): void {
    const durable = this.durable;
    const due = this.waiters.filter((waiter) => waiter.target <= durable);
    if (due.length === 0) return;
    this.waiters.splice(0, this.waiters.length, ...this.waiters.filter((waiter) => waiter.target > durable));
    for (const waiter of due) waiter.resolve();
  }

  /**
   * A ledger writer that can take over another's unwritten records: the newest one writing to the
   * same store (`owner`) takes them.
   */
  addDrainer(drainer: Drainer, owner: object): void {
    this.drainers.push({ drainer, owner });
  }

  /**
   * A closing writer's records the store has not confirmed: another writer drains them, or, when
   * none is left, they stay in the file for the next start. True when another writer took them.
   */
  handOver(from: Drainer, records: readonly ReplayedRecord[]): boolean {
    const index = this.drainers.findIndex((candidate) => candidate.drainer === from);
    if (index < 0) return false;
    const [{ owner }] = this.drainers.splice(index, 1);
    const next = this.drainers.findLast((candidate) => candidate.owner === owner);
    if (next === undefined) return false;
    if (records.length > 0) next.drainer(records);
    return true;
  }

  /** Writes and syncs what is pending, then stops the syncer; undrained records stay for the next start. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.rotationTimer !== null) clearTimeout(this.rotationTimer);
    this.rotationTimer = null;
    await this.synced();
    this.syncer.ref();
    Atomics.store(this.control, CLOSING, 1);
    Atomics.notify(this.control, HEAD);
    Atomics.notify(this.control, KICK);
    await this.exited;
    for (const segment of this.segments) {
      segment.sealed = true;
      segment.end = Math.min(segment.end, this.head);
    }
    await this.removeDone();
    unlock(this.dir);
    for (const { resolve } of this.waiters.splice(0)) resolve();
  }

  /** A previous process's segment: its records, and the ids its `drained` records name (into `drained`). */
  private readSegment(id: number, drained: Set<string>): [Segment, ReplayedRecord[]] {
    const file = path.join(this.dir, segmentName(id));
    const segment = new Segment(id, file);
    segment.sealed = true;
    segment.end = 0;
    const records: ReplayedRecord[] = [];
    const data = readFileSync(file);
    for (const result of readRecords(data)) {
      if (!result.ok) {
        this.options.logger.error(
          { file, offset: result.offset, bytes: data.length },
          `outbox: skipped ${result.reason} at offset ${result.offset} of ${file}${result.resumeAt === null ? '; the rest of the file is unreadable' : ''}`,
        );
        continue;
      }
      const { record } = result;
      if (record.kind === DRAINED) {
        for (const drainedId of (record.row as { ids?: unknown }).ids as unknown[]) if (typeof drainedId === 'string') drained.add(drainedId);
        continue;
      }
      segment.records += 1;
      records.push({ entry: { segment, bytes: result.bytes, id: record.id }, record });
    }
    return [segment, records];
  }

  private failed(error: unknown): void {
    const first = this.failure === null;
    this.failure = error instanceof Error ? error : new Error(String(error));
    if (first) {
      this.options.logger.error({ err: error, dir: this.dir }, 'outbox: writing to the outbox failed; paid requests get 503 billing_unavailable until it succeeds again');
    }
    for (const { resolve } of this.waiters.splice(0)) resolve();
  }

  /**
   * Deletes drained segments the syncer is done with, oldest first, stopping at the first that is not:
   * a segment's `drained` records may name records of older ones, which must not be replayed once it is gone.
   */
  private async removeDone(): Promise<void> {
    while (this.segments.length > 0 && this.segments[0].drainedAll && this.segments[0].end <= this.durable) await this.removeNow(this.segments[0]);
  }

  /** Closes the current segment for appends; the syncer starts the next file where the marker is. */
  private rotate(): void {
    const current = this.current;
    current.sealed = true;
    this.lastRotation = performance.now();
    const next = new Segment(current.id + 1, path.join(this.dir, segmentName(current.id + 1)));
    const marker = Buffer.allocUnsafe(SWITCH_BYTES);
    marker.writeUInt32BE(SWITCH, 0);
    marker.writeUInt32BE(next.id, 4);
    if (this.overflow.length > 0 || !this.put(marker)) this.queue(marker);
    current.end = this.appendedBytes;
    this.current = next;
    this.segments.push(next);
  }

  /** A segment all drained is closed (so it can go) once a second at most; looked at again when it may be. */
  private rotateIfDrained(): void {
    const current = this.current;
    if (this.closed || current.records === 0 || current.drained < current.records) return;
    const wait = ROTATE_IDLE_MS - (performance.now() - this.lastRotation);
    if (wait <= 0) {
      this.rotate();
      // Deleted once the syncer is past it, which may be after the last drain for a while.
      void this.synced().then(() => this.removeDone());
      return;
    }
    this.rotationTimer ??= setTimeout(() => {
      this.rotationTimer = null;
      this.rotateIfDrained();
      void this.removeDone();
    }, wait);
    this.rotationTimer.unref();
  }

  private removeNow(segment: Segment): Promise<void> {
    segment.removed = true;
    this.segments.splice(this.segments.indexOf(segment), 1);
    // A segment never written has no file.
    return unlink(segment.file).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') this.options.logger.warn({ err: error, file: segment.file }, 'outbox: deleting a drained segment failed');
    });
  }
}
