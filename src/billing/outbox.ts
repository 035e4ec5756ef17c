/**
 * A per-instance, append-only outbox on local disk for ledger writes the store has not confirmed
 * yet. A settled charge is appended before it is queued for the store; the append is an encode and a
 * buffer push on the request path. Writing and `fdatasync` happen in groups, on libuv's thread pool
 * (the fs promise API), at most `syncMs` after the first record of a group or sooner once a group
 * reaches GROUP_BYTES, so a kill -9 loses only what was appended since the last sync.
 *
 * Records go to numbered segment files in the outbox's folder. The ledger writer reports each record
 * it has written to the store (`drained`); the ids drained go into the next group as one `drained`
 * record, so a restart skips them, and a segment is deleted once every record in it is drained and
 * no more go into it. A segment is closed for appends when it reaches ROTATE_BYTES, or once all it
 * holds is drained (at most once a second). What a restart replays that the store already has is
 * then at most the last group's drains, each a no-op there.
 *
 * At open, the segments a previous process left are read (`takeReplay`); a record cut short or
 * damaged is skipped with an error line naming the file and offset, never a refusal to start. New
 * records always go to a new segment, so a torn tail is never written after.
 *
 * One process per folder: a lock file holding the owner's pid keeps a second one out (a lock whose
 * pid is gone is taken over). A second process given the same path takes the first free of `<path>-2`,
 * `<path>-3` and so on: instances sharing a working directory share the store too, so whichever of them
 * restarts first drains what a dead one left. Within a process the outbox is shared by reference
 * count, so the plugin chains of a config reload use the same one.
 */
import { mkdirSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { open, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { encodeRecord, readRecords, type OutboxRecord } from './outbox-record';

/** A group is synced at once when it reaches this size, without waiting for the timer. */
const GROUP_BYTES = 256 * 1024;
const ROTATE_BYTES = 4 * 1024 * 1024;
/** A drained segment below ROTATE_BYTES is closed at most this often. */
const ROTATE_IDLE_MS = 1000;
/** After a failed write or sync, the next attempt waits this long. */
const RETRY_MS = 100;
const SEGMENT = /^(\d{10})\.log$/;
const LOCK_FILE = 'lock';
/** Folders tried after the configured one is in use by another process. */
const SIBLING_FOLDERS = 64;
/** A record naming ids the store has confirmed; never replayed itself. */
const DRAINED = 'drained';

export interface OutboxOptions {
  /** The longest a record waits for its group's fdatasync. */
  readonly syncMs: number;
  readonly logger: Logger;
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
  handle: FileHandle | null = null;
  /** Where the next write goes. */
  position = 0;
  records = 0;
  drained = 0;
  pending: Buffer[] = [];
  pendingBytes = 0;
  /** Bytes of a write under way. */
  writing = 0;
  /** No more records go here. */
  sealed = false;
  removed = false;

  constructor(
    readonly id: number,
    readonly file: string,
  ) {}

  get done(): boolean {
    return this.sealed && this.drained >= this.records && this.pendingBytes === 0 && this.writing === 0;
  }
}

function segmentName(id: number): string {
  return `${String(id).padStart(10, '0')}.log`;
}

class OutboxInUseError extends Error {
  override readonly name = 'OutboxInUseError';
  constructor(dir: string, owner: number) {
    super(`the outbox ${dir} is in use by process ${owner}`);
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the folder's lock file, or says which live process holds it. */
function lock(dir: string): void {
  const file = path.join(dir, LOCK_FILE);
  try {
    writeFileSync(file, String(process.pid), { flag: 'wx' });
    return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const owner = Number.parseInt(readFileSync(file, 'utf8'), 10);
  if (Number.isInteger(owner) && owner !== process.pid && pidAlive(owner)) throw new OutboxInUseError(dir, owner);
  writeFileSync(file, String(process.pid));
}

export class Outbox {
  private readonly segments: Segment[] = [];
  private current: Segment;
  private replay: ReplayedRecord[] | null;
  private undrained = 0;
  private timer: NodeJS.Timeout | null = null;
  private syncing: Promise<void> | null = null;
  private failure: Error | null = null;
  private lastRotation = performance.now();
  private readonly waiters: (() => void)[] = [];
  private readonly drainers: { drainer: Drainer; owner: object }[] = [];
  /** Ids drained since the last group, for its `drained` record. */
  private drainedIds: string[] = [];
  private closed = false;

  private constructor(
    readonly dir: string,
    private readonly options: OutboxOptions,
  ) {
    mkdirSync(dir, { recursive: true });
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
    this.current = new Segment((ids.at(-1) ?? 0) + 1, path.join(dir, segmentName((ids.at(-1) ?? 0) + 1)));
    this.segments.push(this.current);
    while (this.segments[0].done) this.remove(this.segments[0]);
  }

  /** Opens (creating) the outbox in `dir`; see the file comment for what a second process gets. */
  static open(dir: string, options: OutboxOptions): Outbox {
    return new Outbox(dir, options);
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

  /** The last write or sync failed (and has not succeeded since): records may not be durable. */
  get writeError(): Error | null {
    return this.failure;
  }

  /** Appends a record: encoded and queued for the next group sync. */
  append(record: OutboxRecord): OutboxEntry {
    if (this.closed) throw new Error('the outbox is closed');
    const bytes = this.push(record);
    this.current.records += 1;
    this.undrained += bytes;
    return { segment: this.current, bytes, id: record.id };
  }

  /** The store has these records: a restart skips them, and their segments may go. */
  drained(entries: readonly OutboxEntry[]): void {
    for (const { segment, bytes, id } of entries) {
      segment.drained += 1;
      this.undrained -= bytes;
      this.drainedIds.push(id);
    }
    if (entries.length > 0) this.schedule(this.options.syncMs);
  }

  private push(record: OutboxRecord): number {
    const bytes = encodeRecord(record);
    const segment = this.current;
    segment.pending.push(bytes);
    segment.pendingBytes += bytes.length;
    if (segment.pendingBytes >= GROUP_BYTES) this.schedule(0);
    else this.schedule(this.options.syncMs);
    return bytes.length;
  }

  /** Resolves once everything appended so far is durable (or a write failed). */
  synced(): Promise<void> {
    if (!this.segments.some((segment) => segment.pendingBytes > 0) && this.syncing === null) return Promise.resolve();
    const done = new Promise<void>((resolve) => this.waiters.push(resolve));
    this.schedule(0);
    return done;
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

  /** Writes and syncs what is pending, then closes the files; undrained records stay for the next start. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.syncing;
    await this.syncOnce().catch(() => undefined);
    for (const segment of this.segments) segment.sealed = true;
    await this.removeDone();
    for (const segment of this.segments) {
      await segment.handle?.close().catch(() => undefined);
      segment.handle = null;
    }
    try {
      unlinkSync(path.join(this.dir, LOCK_FILE));
    } catch {
      // Already gone: nothing to release.
    }
    for (const resolve of this.waiters.splice(0)) resolve();
  }

  /** A previous process's segment: its records, and the ids its `drained` records name (into `drained`). */
  private readSegment(id: number, drained: Set<string>): [Segment, ReplayedRecord[]] {
    const file = path.join(this.dir, segmentName(id));
    const segment = new Segment(id, file);
    segment.sealed = true;
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

  private schedule(delayMs: number): void {
    if (this.closed) return;
    if (this.syncing !== null) return; // the running sync schedules the next one when it ends
    if (this.timer !== null) {
      if (delayMs > 0) return;
      clearTimeout(this.timer);
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      this.syncing = this.syncGroup()
        .catch((error: unknown) => this.failed(error))
        .finally(() => {
          this.syncing = null;
          if (this.failure !== null) this.schedule(RETRY_MS);
          else if (this.segments.some((segment) => segment.pendingBytes > 0)) this.schedule(this.options.syncMs);
          else {
            for (const resolve of this.waiters.splice(0)) resolve();
            // A drained segment not yet closed for appends is looked at again once it may be.
            if (this.current.records > 0 && this.current.drained >= this.current.records) this.schedule(ROTATE_IDLE_MS);
          }
        });
    }, delayMs);
    // Records waiting for their sync keep the process alive; a look at a drained segment does not.
    if (delayMs >= ROTATE_IDLE_MS) this.timer.unref();
  }

  private failed(error: unknown): void {
    const first = this.failure === null;
    this.failure = error instanceof Error ? error : new Error(String(error));
    if (first) {
      this.options.logger.error({ err: error, dir: this.dir }, 'outbox: writing to the outbox failed; paid requests get 503 billing_unavailable until it succeeds again');
    }
    for (const resolve of this.waiters.splice(0)) resolve();
  }

  /** Runs one group, never two at once: `schedule` waits while `syncing` is set, which this sets first. */
  private syncGroup(): Promise<void> {
    const group = Promise.resolve().then(() => this.syncOnce());
    return group;
  }

  /** One group: write and fdatasync each segment's pending records, then rotate and delete. */
  private async syncOnce(): Promise<void> {
    if (this.drainedIds.length > 0) {
      this.push({ kind: DRAINED, id: '', instance: null, row: { ids: this.drainedIds } });
      this.drainedIds = [];
    }
    for (const segment of this.segments) {
      if (segment.pendingBytes === 0) continue;
      const buffers = segment.pending;
      const bytes = segment.pendingBytes;
      segment.pending = [];
      segment.pendingBytes = 0;
      segment.writing = bytes;
      try {
        segment.handle ??= await this.create(segment);
        const { bytesWritten } = await segment.handle.writev(buffers, segment.position);
        if (bytesWritten !== bytes) throw new Error(`the outbox wrote ${bytesWritten} of ${bytes} bytes to ${segment.file}`);
        await segment.handle.datasync();
      } catch (error) {
        // Written again from the same position next time, ahead of what was appended meanwhile.
        segment.pending = buffers.concat(segment.pending);
        segment.pendingBytes += bytes;
        throw error;
      } finally {
        segment.writing = 0;
      }
      segment.position += bytes;
    }
    if (this.failure !== null) {
      this.options.logger.info({ dir: this.dir }, 'outbox: writing to the outbox works again');
      this.failure = null;
    }
    this.rotate();
    await this.removeDone();
  }

  /**
   * Deletes drained segments, oldest first, stopping at the first that is not: a segment's `drained`
   * records may name records of older ones, which must not be replayed once it is gone.
   */
  private async removeDone(): Promise<void> {
    while (this.segments.length > 0 && this.segments[0].done) await this.removeNow(this.segments[0]);
  }

  private rotate(): void {
    const current = this.current;
    const drained = current.records > 0 && current.drained >= current.records;
    const now = performance.now();
    if (current.position < ROTATE_BYTES && !(drained && now - this.lastRotation >= ROTATE_IDLE_MS)) return;
    if (this.closed) return;
    current.sealed = true;
    this.lastRotation = now;
    this.current = new Segment(current.id + 1, path.join(this.dir, segmentName(current.id + 1)));
    this.segments.push(this.current);
  }

  private async create(segment: Segment): Promise<FileHandle> {
    const handle = await open(segment.file, 'w');
    // The new file's name must survive a crash too, or its records would be lost with it.
    const dir = await open(this.dir, 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
    return handle;
  }

  private remove(segment: Segment): void {
    segment.removed = true;
    this.segments.splice(this.segments.indexOf(segment), 1);
    unlinkSync(segment.file);
  }

  private async removeNow(segment: Segment): Promise<void> {
    if (segment.removed) return;
    segment.removed = true;
    this.segments.splice(this.segments.indexOf(segment), 1);
    await segment.handle?.close().catch(() => undefined);
    segment.handle = null;
    // A segment never written has no file.
    await unlink(segment.file).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') this.options.logger.warn({ err: error, file: segment.file }, 'outbox: deleting a drained segment failed');
    });
  }
}

/** Outboxes open in this process, by folder: a config reload's new plugin chain shares the running one. */
const shared = new Map<string, { outbox: Outbox; users: number }>();

/** The outbox at `dir` (or the first free sibling, see the file comment), shared within the process. */
export function acquireOutbox(dir: string, options: OutboxOptions): Outbox {
  const resolved = path.resolve(dir);
  let entry = shared.get(resolved);
  if (entry === undefined) shared.set(resolved, (entry = { outbox: openFree(resolved, options), users: 0 }));
  entry.users += 1;
  return entry.outbox;
}

function openFree(dir: string, options: OutboxOptions): Outbox {
  for (let index = 1; ; index++) {
    const candidate = index === 1 ? dir : `${dir}-${index}`;
    try {
      return Outbox.open(candidate, options);
    } catch (error) {
      if (!(error instanceof OutboxInUseError) || index >= SIBLING_FOLDERS) throw error;
    }
  }
}

export async function releaseOutbox(outbox: Outbox): Promise<void> {
  const found = [...shared].find(([, entry]) => entry.outbox === outbox);
  if (found === undefined) return outbox.close();
  const [dir, entry] = found;
  entry.users -= 1;
  if (entry.users > 0) return;
  shared.delete(dir);
  await outbox.close();
}
