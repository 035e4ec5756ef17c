/**
 * SQLite's lock waits without blocking the event loop. better-sqlite3 is synchronous: with a long
 * busy_timeout, a write lock held by another process (the CLI, a backup) would spin inside one call
 * and freeze every request. The connection waits only a few ms (`BUSY_TIMEOUT_MS`); a statement still
 * refused with SQLITE_BUSY is tried again after an asynchronous pause, with backoff, until
 * `BUSY_DEADLINE_MS`. Safe to repeat: a busy write never started (transactions take the write lock
 * at BEGIN IMMEDIATE), and the store's methods are whole units of work.
 */

/** How long one statement may block the event loop waiting for a lock. */
export const BUSY_TIMEOUT_MS = 10;
/** How long a store call keeps trying before it reports the database as locked (the old busy_timeout). */
const BUSY_DEADLINE_MS = 5000;
const FIRST_PAUSE_MS = 5;
const MAX_PAUSE_MS = 100;

/** SQLITE_BUSY (and SQLITE_LOCKED) from better-sqlite3 (`code`) or node:sqlite (`errcode` 5 or 6). */
function isBusy(error: unknown): boolean {
  const { code, errcode } = (error ?? {}) as { code?: unknown; errcode?: unknown };
  if (typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)/.test(code)) return true;
  return errcode === 5 || errcode === 6;
}

/** Runs `work` until it is not refused as busy, pausing (never blocking) between tries. */
async function whenNotBusy<T>(work: () => Promise<T>, deadlineMs = BUSY_DEADLINE_MS): Promise<T> {
  const deadline = performance.now() + deadlineMs;
  for (let pause = FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, MAX_PAUSE_MS)) {
    try {
      return await work();
    } catch (error) {
      if (!isBusy(error) || performance.now() + pause > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

type AsyncMethod = (...args: never[]) => Promise<unknown>;

/**
 * Makes each of `methods` on `target` run through `whenNotBusy`. Done on the instance, so the store's
 * methods stay plain and any back end (better-sqlite3 or node:sqlite) gets the same waits.
 */
export function retryWhileBusy<T extends object>(target: T, methods: readonly (keyof T & string)[]): void {
  for (const name of methods) {
    const original = target[name] as unknown as AsyncMethod;
    const retrying = (...args: never[]): Promise<unknown> => whenNotBusy(() => original.apply(target, args));
    Object.defineProperty(target, name, { value: retrying, writable: true, configurable: true });
  }
}
