/**
 * Random hex for the ids of replies Tollgate writes itself (`chatcmpl-…`, `msg_…`, `call_…`, `resp_…`):
 * drawn from the system's CSPRNG 4 KiB at a time, as `crypto.randomUUID` does. One `randomBytes(12)`
 * per id asks the system every time and showed as `randomFillSync` in the translated-stream profile; a
 * pooled draw is far cheaper and as unpredictable (figures in docs/benchmarks.md).
 */
import { randomFillSync } from 'node:crypto';

const POOL_BYTES = 4096;

let pool = Buffer.alloc(0);
let used = 0;

/** `bytes` random bytes (at most 4,096) as lower-case hex. */
export function randomHex(bytes: number): string {
  if (used + bytes > pool.length) {
    pool = randomFillSync(Buffer.allocUnsafe(POOL_BYTES));
    used = 0;
  }
  const hex = pool.toString('hex', used, used + bytes);
  // Each byte is handed out once: the pool never repeats an id's bytes in another.
  used += bytes;
  return hex;
}
