/**
 * The outbox's syncing thread: takes the records the request thread appended to the shared ring and
 * writes them to the current segment file, one writev and one fdatasync per group. It runs on its own
 * clock, so a busy or blocked request thread (a long synchronous SQLite commit, a GC pause) and a busy
 * libuv pool (request log writes) never delay a sync (see `run` for when a group is written), so a
 * record is on disk about `syncMs` after it was appended, plus whatever the machine's scheduler adds.
 *
 * A failed write or sync is reported and retried every `retryMs` from the last durable point (the
 * segment file rewritten from there); nothing counts as durable before its fdatasync returned.
 */
import { closeSync, fdatasyncSync, fsyncSync, openSync, writevSync } from 'node:fs';
import { PRIVATE_FILE_MODE } from '../private-files';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { CLOSING, DURABLE, HEAD, IDLE, KICK, RING_BYTES, RING_MASK, segmentName, SWITCH, SWITCH_BYTES, SYNCS, WANT, type SyncerData, type SyncerMessage } from './ring';

const data = workerData as SyncerData;
const control = new Int32Array(data.control);
const ring = Buffer.from(data.ring);
/** Waited on for pauses, never notified. */
const sleeper = new Int32Array(new SharedArrayBuffer(4));

interface Place {
  segment: number;
  fd: number | null;
  position: number;
}

/** Where the next durable byte goes: restored after a failed group. */
let durablePlace: Place = { segment: data.firstSegment, fd: null, position: 0 };
let durable = 0;
/** Recent fdatasync time, which a group's wait leaves room for. */
let syncEstimateMs = 2;
/** fdatasync calls of the last group (two when it crossed into a new segment). */
let groupSyncs = 0;

function post(message: SyncerMessage): void {
  parentPort!.postMessage(message);
}

function byteAt(counter: number): number {
  return ring[counter & RING_MASK];
}

function uint32At(counter: number): number {
  return ((byteAt(counter) << 24) | (byteAt(counter + 1) << 16) | (byteAt(counter + 2) << 8) | byteAt(counter + 3)) >>> 0;
}

/** The ring's bytes from `from` to `to` (counters), as one or two slices. */
function slices(from: number, to: number): Buffer[] {
  const start = from & RING_MASK;
  const length = (to - from) | 0;
  if (start + length <= RING_BYTES) return [ring.subarray(start, start + length)];
  return [ring.subarray(start), ring.subarray(0, start + length - RING_BYTES)];
}

function writeAll(fd: number, buffers: Buffer[], position: number): number {
  let written = 0;
  let left = buffers;
  for (;;) {
    const bytes = writevSync(fd, left, position + written);
    written += bytes;
    let skip = bytes;
    while (left.length > 0 && skip >= left[0].length) {
      skip -= left[0].length;
      left = left.slice(1);
    }
    if (left.length === 0) return written;
    left = [left[0].subarray(skip), ...left.slice(1)];
  }
}

function openSegment(id: number): number {
  const fd = openSync(path.join(data.dir, segmentName(id)), 'w', PRIVATE_FILE_MODE);
  // The new file's name must survive a crash too, or its records would be lost with it.
  const dir = openSync(data.dir, 'r');
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
  return fd;
}

/** Writes and syncs the ring from `durable` to `head`; on failure nothing counts as done. */
function writeGroup(head: number): void {
  const place: Place = { ...durablePlace };
  groupSyncs = 0;
  const opened: number[] = [];
  const left: number[] = [];
  try {
    let runStart = durable;
    let at = durable;
    let dirty = false;
    const flush = (to: number): void => {
      if (to === runStart) return;
      if (place.fd === null) opened.push((place.fd = openSegment(place.segment)));
      place.position += writeAll(place.fd, slices(runStart, to), place.position);
      dirty = true;
    };
    while (at !== head) {
      const length = uint32At(at);
      if (length !== SWITCH) {
        at = (at + 8 + length) | 0;
        continue;
      }
      flush(at);
      if (dirty) sync(place.fd!);
      if (place.fd !== null) left.push(place.fd);
      place.segment = uint32At(at + 4);
      place.fd = null;
      place.position = 0;
      dirty = false;
      at = (at + SWITCH_BYTES) | 0;
      runStart = at;
    }
    flush(head);
    if (dirty) sync(place.fd!);
  } catch (error) {
    // Files created by this attempt are created again (truncated) by the next.
    for (const fd of opened) closeQuietly(fd);
    throw error;
  }
  for (const fd of left) closeQuietly(fd);
  durablePlace = place;
  durable = head;
}

function sync(fd: number): void {
  fdatasyncSync(fd);
  groupSyncs += 1;
  Atomics.add(control, SYNCS, 1);
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // Nothing more to do with it.
  }
}

function pause(ms: number): void {
  if (ms > 0) Atomics.wait(sleeper, 0, 0, ms);
}

/** Waits until records are there; false when the outbox closes with none left. */
function awaitRecords(): boolean {
  for (;;) {
    if (Atomics.load(control, HEAD) !== durable) return true;
    if (Atomics.load(control, CLOSING) === 1) return false;
    Atomics.store(control, IDLE, 1);
    // Checked again after saying so: an append that missed IDLE is seen here.
    const head = Atomics.load(control, HEAD);
    if (head === durable && Atomics.load(control, CLOSING) === 0) Atomics.wait(control, HEAD, head);
    Atomics.store(control, IDLE, 0);
  }
}

/**
 * Sleeps until `due`, or until the records waiting reach a group's size bound, or closing; returns how
 * late it woke (ms).
 */
function pauseUntil(due: number): number {
  for (;;) {
    const left = due - performance.now();
    if (left <= 0) return -left;
    if (Atomics.load(control, CLOSING) === 1) return 0;
    if (((Atomics.load(control, HEAD) - durable) | 0) >= data.groupBytes) return 0;
    Atomics.wait(control, KICK, Atomics.load(control, KICK), left);
  }
}

/**
 * Records that come to an idle syncer are written at once; after each group the syncer sleeps for
 * `syncMs` less the recent write-and-sync time, and what came meanwhile is the next group. So a
 * record waits at most about `syncMs` for its sync, and under steady load the syncer wakes once a group.
 */
function run(): void {
  let failing = false;
  let late = 0;
  for (;;) {
    if (!awaitRecords()) break;
    const head = Atomics.load(control, HEAD);
    const started = performance.now();
    try {
      writeGroup(head);
    } catch (error) {
      const failure = error as NodeJS.ErrnoException;
      if (!failing) post({ type: 'failed', message: failure.message, code: failure.code ?? null });
      failing = true;
      if (Atomics.load(control, CLOSING) === 1) break;
      pause(data.retryMs);
      continue;
    }
    const ended = performance.now();
    syncEstimateMs = syncEstimateMs * 0.8 + (ended - started) * 0.2;
    Atomics.store(control, DURABLE, durable);
    // Read by the request thread when it needs it; a message only when it waits for one (or to say it works again).
    if (failing || Atomics.load(control, WANT) === 1) post({ type: 'synced', durable, at: performance.timeOrigin + ended, ms: ended - started, syncs: groupSyncs, late });
    failing = false;
    late = pauseUntil(started + Math.max(0, data.syncMs - syncEstimateMs));
  }
  if (durablePlace.fd !== null) closeQuietly(durablePlace.fd);
}

run();
