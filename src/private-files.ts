/**
 * What Tollgate writes to disk is for its own user alone: the store holds password hashes, TOTP
 * secrets and the ledger; the outbox holds every charge. Folders it makes are 0700 and files 0600,
 * whatever the umask; what existed before with looser modes is named at start (`looserThanPrivate`)
 * rather than changed behind the operator's back.
 */
import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';

const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Makes `dir` (and its missing parents) readable by this user alone. */
export function makePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/**
 * SQLite makes the database with the process's umask and its -wal and -shm files with the
 * database's mode, so tightening the database first covers the two it makes next.
 */
export function tightenFiles(...files: readonly string[]): void {
  for (const file of files) {
    if (existsSync(file)) chmodSync(file, PRIVATE_FILE_MODE);
  }
}

/** The paths of `paths` that exist and that others may read or enter, with their modes. */
function looserThanPrivate(paths: readonly string[]): { path: string; mode: string }[] {
  const loose: { path: string; mode: string }[] = [];
  for (const path of paths) {
    if (!existsSync(path)) continue;
    const mode = statSync(path).mode & 0o777;
    if ((mode & 0o077) !== 0) loose.push({ path, mode: `0${mode.toString(8)}` });
  }
  return loose;
}

/** An SQLite store's folder, database and the two files SQLite keeps beside it. */
export function storeFiles(database: string): string[] {
  return [path.dirname(database), database, `${database}-wal`, `${database}-shm`];
}

/** One warning line per path others may read, naming the fix; made before this version, or by hand. */
export function warnIfReadableByOthers(logger: Logger, paths: readonly string[]): void {
  for (const { path: loose, mode } of looserThanPrivate(paths)) {
    logger.warn({ path: loose, mode }, `${loose} is readable by other users (mode ${mode}); run chmod ${statSync(loose).isDirectory() ? '700' : '600'} on it (Tollgate makes its files 0600 and its folders 0700)`);
  }
}
