/**
 * The SQLite binding under the embedded store, chosen once per process: Node's built-in `node:sqlite`
 * where it exists (Node 22.13 and later), better-sqlite3 12 on Node 20.
 *
 * Why two: better-sqlite3 12 derives its Database and Statement from node::ObjectWrap, whose destructor
 * calls RemoveEnvironmentCleanupHook since Node 24.19; when the garbage collector finalises a statement
 * from a background task (no V8 context entered), that call asserts `(env) != nullptr` and aborts the
 * process. better-sqlite3 13 fixed it by moving to node-addon-api but needs Node 22 (it crashes on 20),
 * and `node:sqlite` does not exist on 20. The built-in needs no compiler and no download; Node 20 keeps
 * the binding it always had, where the bug does not exist.
 *
 * Both sit behind the few calls the store makes, with better-sqlite3's meaning: `prepare` → `run`,
 * `get`, `all`, `pluck`; `transaction(fn)` (savepoints when nested) with `.immediate()`; `pragma`.
 */
import { createRequire } from 'node:module';

interface SqliteRunResult {
  changes: number;
}

export interface SqliteStatement<P extends unknown[] = unknown[], R = unknown> {
  run(...params: P): SqliteRunResult;
  get(...params: P): R | undefined;
  all(...params: P): R[];
  /** Rows become their first column's value. */
  pluck(): SqliteStatement<P, R>;
}

export interface SqliteTransaction<A extends unknown[], T> {
  (...args: A): T;
  /** Runs under BEGIN IMMEDIATE: takes the write lock before the first read. */
  immediate(...args: A): T;
}

export interface SqliteDatabase {
  readonly open: boolean;
  exec(sql: string): void;
  prepare<P extends unknown[] = unknown[], R = unknown>(sql: string): SqliteStatement<P, R>;
  /** Made once and called with arguments, it is cheaper than made per call (better-sqlite3 builds four wrappers). */
  transaction<T, A extends unknown[] = []>(fn: (...args: A) => T): SqliteTransaction<A, T>;
  close(): void;
}

export type SqliteDriverName = 'node:sqlite' | 'better-sqlite3';

// The slice of node:sqlite used here, declared locally: @types/node 20 does not describe the module.
interface NodeStatementSync {
  run(...params: unknown[]): { changes: number | bigint };
  get(...params: unknown[]): Record<string, unknown> | undefined;
  all(...params: unknown[]): Record<string, unknown>[];
  setAllowUnknownNamedParameters?(enabled: boolean): void;
}
interface NodeDatabaseSync {
  exec(sql: string): void;
  prepare(sql: string): NodeStatementSync;
  close(): void;
}
interface NodeSqliteModule {
  DatabaseSync: new (path: string, options?: { readOnly?: boolean }) => NodeDatabaseSync;
}

const requireHere = createRequire(__filename);

/** node:sqlite, or null where this Node has none (or only behind --experimental-sqlite). */
function loadNodeSqlite(): NodeSqliteModule | null {
  // Node 24 still flags the module experimental and says so on stderr at load; the store is tested on
  // it, so that one warning is noise in an operator's log.
  const emitWarning = process.emitWarning;
  process.emitWarning = function quietSqliteWarning(this: NodeJS.Process, warning: string | Error, ...rest: unknown[]) {
    const text = typeof warning === 'string' ? warning : warning.message;
    if (text.startsWith('SQLite is an experimental feature')) return;
    (emitWarning as (warning: string | Error, ...rest: unknown[]) => void).call(this, warning, ...rest);
  };
  try {
    return requireHere('node:sqlite') as NodeSqliteModule;
  } catch {
    return null;
  } finally {
    process.emitWarning = emitWarning;
  }
}

const nodeSqlite = loadNodeSqlite();

/** Which binding this process uses. */
export const SQLITE_DRIVER: SqliteDriverName = nodeSqlite === null ? 'better-sqlite3' : 'node:sqlite';

/** Opens (or creates) `filename`; `:memory:` for a private in-memory database. */
export function openSqlite(filename: string, options: { readonly?: boolean } = {}): SqliteDatabase {
  if (nodeSqlite !== null) return new NodeSqliteDatabase(new nodeSqlite.DatabaseSync(filename, { readOnly: options.readonly ?? false }));
  const BetterSqlite = requireHere('better-sqlite3') as typeof import('better-sqlite3');
  // better-sqlite3's own objects already have the shape above; only the generic signatures differ.
  return new BetterSqlite(filename, { readonly: options.readonly ?? false }) as unknown as SqliteDatabase;
}

// SQLite's extended result codes for constraint failures, by the names better-sqlite3 gives them.
const CONSTRAINT_CODES: Record<number, string> = {
  275: 'SQLITE_CONSTRAINT_CHECK',
  787: 'SQLITE_CONSTRAINT_FOREIGNKEY',
  1299: 'SQLITE_CONSTRAINT_NOTNULL',
  1555: 'SQLITE_CONSTRAINT_PRIMARYKEY',
  2067: 'SQLITE_CONSTRAINT_UNIQUE',
};

/** SQLite's error code of a failed call (`SQLITE_CONSTRAINT_UNIQUE` …), whichever binding threw it. */
export function sqliteErrorCode(error: unknown): string | null {
  if (!(error instanceof Error)) return null;
  const fields = error as Error & { code?: unknown; errcode?: unknown };
  if (typeof fields.errcode === 'number') return CONSTRAINT_CODES[fields.errcode] ?? `SQLITE_ERROR_${fields.errcode}`;
  return typeof fields.code === 'string' && fields.code.startsWith('SQLITE_') ? fields.code : null;
}

/** node:sqlite gives blobs as Uint8Array; the store (like better-sqlite3) works with Buffers. */
function withBuffers(row: Record<string, unknown>): Record<string, unknown> {
  for (const column in row) {
    const value = row[column];
    if (value instanceof Uint8Array && !Buffer.isBuffer(value)) row[column] = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  }
  return row;
}

function firstColumn(row: Record<string, unknown>): unknown {
  for (const column in row) return row[column];
  return undefined;
}

class NodeSqliteStatement<P extends unknown[], R> implements SqliteStatement<P, R> {
  constructor(
    private readonly statement: NodeStatementSync,
    private readonly plucked: boolean,
  ) {
    // better-sqlite3 ignores named parameters a statement does not use; callers pass whole rows.
    statement.setAllowUnknownNamedParameters?.(true);
  }

  private shape(row: Record<string, unknown>): R {
    const buffered = withBuffers(row);
    return (this.plucked ? firstColumn(buffered) : buffered) as R;
  }

  run(...params: P): SqliteRunResult {
    return { changes: Number(this.statement.run(...params).changes) };
  }

  get(...params: P): R | undefined {
    const row = this.statement.get(...params);
    return row === undefined ? undefined : this.shape(row);
  }

  all(...params: P): R[] {
    return this.statement.all(...params).map((row) => this.shape(row));
  }

  pluck(): SqliteStatement<P, R> {
    return new NodeSqliteStatement<P, R>(this.statement, true);
  }
}

class NodeSqliteDatabase implements SqliteDatabase {
  private isOpen = true;
  private depth = 0;

  constructor(private readonly db: NodeDatabaseSync) {}

  get open(): boolean {
    return this.isOpen;
  }

  exec(sql: string): void {
    this.db.exec(sql);
  }

  prepare<P extends unknown[] = unknown[], R = unknown>(sql: string): SqliteStatement<P, R> {
    return new NodeSqliteStatement<P, R>(this.db.prepare(sql), false);
  }

  transaction<T, A extends unknown[] = []>(fn: (...args: A) => T): SqliteTransaction<A, T> {
    const run = (begin: 'BEGIN' | 'BEGIN IMMEDIATE', args: A): T => (this.depth === 0 ? this.outermost(() => fn(...args), begin) : this.nested(() => fn(...args)));
    return Object.assign((...args: A) => run('BEGIN', args), { immediate: (...args: A) => run('BEGIN IMMEDIATE', args) });
  }

  private outermost<T>(fn: () => T, begin: string): T {
    this.db.exec(begin);
    this.depth = 1;
    try {
      const result = fn();
      this.db.exec('COMMIT');
      return result;
    } catch (error) {
      this.db.exec('ROLLBACK');
      throw error;
    } finally {
      this.depth = 0;
    }
  }

  private nested<T>(fn: () => T): T {
    const name = `tollgate_${this.depth}`;
    this.db.exec(`SAVEPOINT ${name}`);
    this.depth += 1;
    try {
      const result = fn();
      this.db.exec(`RELEASE ${name}`);
      return result;
    } catch (error) {
      this.db.exec(`ROLLBACK TO ${name}; RELEASE ${name}`);
      throw error;
    } finally {
      this.depth -= 1;
    }
  }

  close(): void {
    if (!this.isOpen) return;
    this.isOpen = false;
    this.db.close();
  }
}
