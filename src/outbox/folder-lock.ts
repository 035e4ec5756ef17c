/**
 * One process per outbox folder: a lock file holding the owner's pid keeps a second one out. A lock
 * whose pid is gone (a process that died) is taken over, so a restart never waits for a stale one.
 */
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PRIVATE_FILE_MODE } from '../private-files';
import { pidAlive } from '../process-alive';

/** The lock file's name in an outbox folder; `scan.ts` reads it for the owner's pid. */
export const LOCK_FILE = 'lock';

export class OutboxInUseError extends Error {
  override readonly name = 'OutboxInUseError';
  constructor(dir: string, owner: number) {
    super(`the outbox ${dir} is in use by process ${owner}`);
  }
}

/** Takes the folder's lock file, or says which live process holds it. */
export function lock(dir: string): void {
  const file = path.join(dir, LOCK_FILE);
  try {
    writeFileSync(file, String(process.pid), { flag: 'wx', mode: PRIVATE_FILE_MODE });
    return;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const owner = Number.parseInt(readFileSync(file, 'utf8'), 10);
  if (Number.isInteger(owner) && owner !== process.pid && pidAlive(owner)) throw new OutboxInUseError(dir, owner);
  writeFileSync(file, String(process.pid), { mode: PRIVATE_FILE_MODE });
}

/** Gives the folder's lock back (an outbox closing). */
export function unlock(dir: string): void {
  try {
    unlinkSync(path.join(dir, LOCK_FILE));
  } catch {
    // Already gone: nothing to release.
  }
}
