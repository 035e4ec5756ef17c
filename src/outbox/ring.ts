/**
 * The memory the outbox shares with its syncing thread (`syncer.ts`): a ring of record bytes
 * the request thread appends to and the syncer writes to disk, and a few 32-bit control slots. The
 * counters are byte counts since the outbox opened, kept modulo 2^32 (the ring is far smaller, so a
 * difference of two of them is exact); a position in the ring is a counter masked by RING_MASK.
 *
 * A segment change travels in the ring as an 8-byte SWITCH marker (a record header whose length is
 * SWITCH, then the new segment's number), so the syncer starts the new file exactly where the request
 * thread sealed the old one. Markers are never written to disk.
 */

/**
 * A power of two. Every byte of it is resident once the appends have gone round it once, so it is
 * sized for how far the syncer can fall behind, not for a backlog: four groups of GROUP_BYTES, a second
 * of charges at 3,000 a second (a plain chat charge is about 340 bytes), thirty times the slowest
 * fdatasync bench:outbox saw. A disk slower than that sends records to the outbox's overflow list until
 * the ring has room, in order.
 */
export const RING_BYTES = 1024 * 1024;
export const RING_MASK = RING_BYTES - 1;
/** A record header's length field naming a segment change instead. */
export const SWITCH = 0xffffffff;
export const SWITCH_BYTES = 8;

/** Control slots (indexes into an Int32Array). */
export const HEAD = 0; // bytes appended: written by the request thread
export const DURABLE = 1; // bytes written and fdatasynced: written by the syncer
export const IDLE = 2; // 1 while the syncer waits for records (so an append wakes it)
export const KICK = 3; // bumped when a group reaches its size bound (the syncer writes it at once)
export const CLOSING = 4; // 1: write what is left and stop
export const WANT = 5; // 1 while the request thread wants a message after each group (someone waits on a sync)
export const SYNCS = 6; // fdatasync calls made (for figures)
export const CONTROL_SLOTS = 8;

export interface SyncerData {
  readonly control: SharedArrayBuffer;
  readonly ring: SharedArrayBuffer;
  readonly dir: string;
  /** The segment the first records go to (its file is created when they come). */
  readonly firstSegment: number;
  /** A record is on disk at most about this long after it was appended. */
  readonly syncMs: number;
  /** A group this large is written at once. */
  readonly groupBytes: number;
  readonly retryMs: number;
}

/** What the syncer tells the request thread. */
export type SyncerMessage =
  | {
      readonly type: 'synced';
      readonly durable: number;
      /** When the group was on disk (epoch ms), how long its write and sync took, its fdatasync calls. */
      readonly at: number;
      readonly ms: number;
      readonly syncs: number;
      /** How much later than planned the syncer woke for it (the machine's scheduler), ms. */
      readonly late: number;
    }
  | { readonly type: 'failed'; readonly message: string; readonly code: string | null };

export function segmentName(id: number): string {
  return `${String(id).padStart(10, '0')}.log`;
}
