/** Chooses and opens the store named by `store.url` in gateway.yaml. */
import path from 'node:path';
import type { StoreConfig } from '../config/types';
import { SQLITE_MEMORY, SqliteStore } from './sqlite';
import type { Store } from './store';

const SQLITE_SCHEME = 'sqlite:';

/**
 * Opens the store for `config.url`: `sqlite:<path>` (a relative path resolves against `baseDir`,
 * default the working directory; `sqlite::memory:` keeps it in memory) or `postgres://…`.
 * The caller runs `migrate()` next. Throws a one-line Error for anything else.
 */
export function openStore(config: StoreConfig, baseDir: string = process.cwd()): Store {
  const url = config.url.trim();

  if (url.startsWith(SQLITE_SCHEME)) {
    const file = url.slice(SQLITE_SCHEME.length);
    if (file === '') throw new Error('store.url "sqlite:" names no file; write sqlite:<path>, e.g. sqlite:data/tollgate.db');
    return new SqliteStore(file === SQLITE_MEMORY ? SQLITE_MEMORY : path.resolve(baseDir, file));
  }

  // Messages name only the scheme: a database URL usually carries a password.
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  if (scheme === 'postgres' || scheme === 'postgresql') {
    throw new Error(
      'store.url: the PostgreSQL store is not available in this build yet (it arrives with the billing work); use sqlite:<path>',
    );
  }
  throw new Error(
    `store.url: unsupported store ${scheme === undefined ? 'URL' : `scheme "${scheme}:"`}; use sqlite:<path> or postgres://…`,
  );
}
