/** Chooses and opens the store named by `store.url` in gateway.yaml. */
import path from 'node:path';
import type { StoreConfig } from '../config/types';
import type * as Postgres from './postgres';
import { SQLITE_MEMORY, SqliteStore } from './sqlite';
import type { Store } from './store';

const SQLITE_SCHEME = 'sqlite:';

/** Used when the configuration names a PostgreSQL URL but leaves a timeout or the pool size out. */
const POSTGRES_DEFAULTS = { connect_timeout_ms: 2000, statement_timeout_ms: 5000, pool_size: 10 } as const;

/**
 * Opens the store for `config.url`: `sqlite:<path>` (a relative path resolves against `baseDir`,
 * default the working directory; `sqlite::memory:` keeps it in memory) or `postgres://…` /
 * `postgresql://…` (nothing connects until `migrate()`). The caller runs `migrate()` next. Throws a one-line Error for anything else.
 */
export function openStore(config: Pick<StoreConfig, 'url'> & Partial<StoreConfig>, baseDir: string = process.cwd()): Store {
  const url = config.url.trim();

  if (url.startsWith(SQLITE_SCHEME)) {
    const file = url.slice(SQLITE_SCHEME.length);
    if (file === '') throw new Error('store.url "sqlite:" names no file; write sqlite:<path>, e.g. sqlite:data/tollgate.db');
    return new SqliteStore(file === SQLITE_MEMORY ? SQLITE_MEMORY : path.resolve(baseDir, file));
  }

  // Messages name only the scheme: a database URL usually carries a password.
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url)?.[1]?.toLowerCase();
  if (scheme === 'postgres' || scheme === 'postgresql') {
    // pg is loaded only for a PostgreSQL store.
    const { PostgresStore } = require('./postgres') as typeof Postgres;
    return new PostgresStore({
      url,
      connect_timeout_ms: config.connect_timeout_ms ?? POSTGRES_DEFAULTS.connect_timeout_ms,
      statement_timeout_ms: config.statement_timeout_ms ?? POSTGRES_DEFAULTS.statement_timeout_ms,
      pool_size: config.pool_size ?? POSTGRES_DEFAULTS.pool_size,
    });
  }
  throw new Error(
    `store.url: unsupported store ${scheme === undefined ? 'URL' : `scheme "${scheme}:"`}; use sqlite:<path> or postgres://…`,
  );
}
