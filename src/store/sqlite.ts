/**
 * The embedded store: one SQLite file through better-sqlite3, in WAL mode so that the server and a CLI
 * command (`tollgate key revoke`) can use the same file at the same time. better-sqlite3 is synchronous;
 * the async methods of `Store` simply return settled promises, and every query here is an indexed
 * lookup that takes microseconds.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { AccountExistsError, type Account, type AccountRole, type ApiKeyRecord, type KeyIdentity, type NewKey, type Store } from './store';
import { applySqliteMigrations } from './migrations/sqlite';

/** The file name better-sqlite3 understands as "no file, keep it in memory" (tests). */
export const SQLITE_MEMORY = ':memory:';

interface AccountRow {
  id: string;
  name: string;
  role: AccountRole;
  disabled: number;
  created_at: number;
}

interface KeyRow {
  id: string;
  account_id: string;
  name: string | null;
  prefix: string;
  last4: string;
  created_at: number;
  revoked_at: number | null;
  expires_at: number | null;
}

/** One row of the key + account join that authentication reads. */
interface KeyIdentityRow extends KeyRow {
  hash: Buffer;
  account_name: string;
  account_role: AccountRole;
  account_disabled: number;
  account_created_at: number;
}

// Listing order: creation time, then insertion order (rowid) for keys made in the same millisecond.
const KEY_COLUMNS = 'k.id, k.account_id, k.name, k.prefix, k.last4, k.created_at, k.revoked_at, k.expires_at';

/** Every statement the store runs, prepared once after the schema exists. */
function prepareStatements(db: Database.Database) {
  return {
    insertAccount: db.prepare<[AccountRow]>(
      'INSERT INTO accounts (id, name, role, disabled, created_at) VALUES (@id, @name, @role, @disabled, @created_at)',
    ),
    accountByName: db.prepare<[string], AccountRow>('SELECT * FROM accounts WHERE name = ?'),
    accountById: db.prepare<[string], number>('SELECT 1 FROM accounts WHERE id = ?').pluck(),
    countAccounts: db.prepare<[], number>('SELECT count(*) FROM accounts').pluck(),
    insertKey: db.prepare<[KeyRow & { hash: Buffer }]>(
      `INSERT INTO api_keys (id, account_id, name, hash, prefix, last4, created_at, revoked_at, expires_at)
       VALUES (@id, @account_id, @name, @hash, @prefix, @last4, @created_at, @revoked_at, @expires_at)`,
    ),
    allKeys: db.prepare<[], KeyRow>(`SELECT ${KEY_COLUMNS} FROM api_keys k ORDER BY k.created_at, k.rowid`),
    keysOfAccount: db.prepare<[string], KeyRow>(
      `SELECT ${KEY_COLUMNS} FROM api_keys k WHERE k.account_id = ? ORDER BY k.created_at, k.rowid`,
    ),
    // COALESCE keeps the first revocation time when a key is revoked twice.
    revokeKey: db.prepare<[number, string]>('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?'),
    keyIdentityByHash: db.prepare<[Buffer], KeyIdentityRow>(
      `SELECT ${KEY_COLUMNS}, k.hash,
              a.name AS account_name, a.role AS account_role,
              a.disabled AS account_disabled, a.created_at AS account_created_at
         FROM api_keys k JOIN accounts a ON a.id = k.account_id
        WHERE k.hash = ?`,
    ),
  };
}

type Statements = ReturnType<typeof prepareStatements>;

/** Returns `prefix` followed by 16 random hex characters (64 bits): unguessable, short enough to type. */
function newId(prefix: 'acc_' | 'key_'): string {
  return prefix + randomBytes(8).toString('hex');
}

function toDate(ms: number | null): Date | null {
  return ms === null ? null : new Date(ms);
}

function toAccount(row: AccountRow): Account {
  return { id: row.id, name: row.name, role: row.role, disabled: row.disabled !== 0, createdAt: new Date(row.created_at) };
}

function toKeyRecord(row: KeyRow): ApiKeyRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    prefix: row.prefix,
    last4: row.last4,
    createdAt: new Date(row.created_at),
    revokedAt: toDate(row.revoked_at),
    expiresAt: toDate(row.expires_at),
  };
}

function isConstraintError(error: unknown, code: string): boolean {
  return error instanceof Database.SqliteError && error.code === code;
}

/** The `Store` on one SQLite file (or `:memory:`). Call `migrate()` before anything else. */
export class SqliteStore implements Store {
  private readonly db: Database.Database;
  private readonly dataVersion: Database.Statement<[], number>;
  private readonly selectOne: Database.Statement<[], number>;
  private statements: Statements | null = null;
  /** Bumped by this connection's own key and account writes, which `data_version` does not count. */
  private localRevision = 0;

  /** Opens (and creates, with its folder) the database file; `:memory:` for a private in-memory store. */
  constructor(readonly filename: string) {
    if (filename !== SQLITE_MEMORY) mkdirSync(path.dirname(path.resolve(filename)), { recursive: true });
    this.db = new Database(filename);
    // WAL lets readers (the server) and a writer (the CLI) work at once. NORMAL is durable across a
    // process crash in WAL mode and only risks the last commits on power loss: fine for keys.
    // TODO(billing): decide whether ledger commits need synchronous = FULL when they move in here.
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.pragma('foreign_keys = ON');
    // Changes whenever ANOTHER connection commits to the file; our own commits leave it alone.
    this.dataVersion = this.db.prepare<[], number>('PRAGMA data_version').pluck();
    this.selectOne = this.db.prepare<[], number>('SELECT 1').pluck();
  }

  /** The prepared statements; made on first use because they need the tables `migrate()` creates. */
  private get sql(): Statements {
    this.statements ??= prepareStatements(this.db);
    return this.statements;
  }

  async migrate(): Promise<void> {
    applySqliteMigrations(this.db);
  }

  async createAccount(input: { name: string; role: AccountRole }): Promise<Account> {
    const row: AccountRow = { id: newId('acc_'), name: input.name, role: input.role, disabled: 0, created_at: Date.now() };
    try {
      this.sql.insertAccount.run(row);
    } catch (error) {
      if (isConstraintError(error, 'SQLITE_CONSTRAINT_UNIQUE')) throw new AccountExistsError(input.name);
      throw error;
    }
    this.localRevision += 1;
    return toAccount(row);
  }

  async findAccountByName(name: string): Promise<Account | null> {
    const row = this.sql.accountByName.get(name);
    return row === undefined ? null : toAccount(row);
  }

  async countAccounts(): Promise<number> {
    return this.sql.countAccounts.get() ?? 0;
  }

  async createKey(input: NewKey): Promise<ApiKeyRecord> {
    // Checked here for a clear message; the foreign key would reject it too, but only as "constraint failed".
    if (this.sql.accountById.get(input.accountId) === undefined) {
      throw new Error(`no account with id "${input.accountId}"`);
    }
    const row: KeyRow = {
      id: newId('key_'),
      account_id: input.accountId,
      name: input.name,
      prefix: input.prefix,
      last4: input.last4,
      created_at: Date.now(),
      revoked_at: null,
      expires_at: input.expiresAt?.getTime() ?? null,
    };
    this.sql.insertKey.run({ ...row, hash: input.hash });
    this.localRevision += 1;
    return toKeyRecord(row);
  }

  async listKeys(filter?: { accountId?: string }): Promise<ApiKeyRecord[]> {
    const rows = filter?.accountId === undefined ? this.sql.allKeys.all() : this.sql.keysOfAccount.all(filter.accountId);
    return rows.map(toKeyRecord);
  }

  async revokeKey(id: string): Promise<boolean> {
    const { changes } = this.sql.revokeKey.run(Date.now(), id);
    if (changes > 0) this.localRevision += 1;
    return changes > 0;
  }

  async findKeyByHash(hash: Buffer): Promise<KeyIdentity | null> {
    const row = this.sql.keyIdentityByHash.get(hash);
    if (row === undefined) return null;
    const account = toAccount({
      id: row.account_id,
      name: row.account_name,
      role: row.account_role,
      disabled: row.account_disabled,
      created_at: row.account_created_at,
    });
    return { key: toKeyRecord(row), account, hash: row.hash };
  }

  keysRevision(): number {
    // Both parts only grow, so their sum changes whenever either does.
    return (this.dataVersion.get() ?? 0) + this.localRevision;
  }

  async ping(): Promise<boolean> {
    try {
      return this.selectOne.get() === 1;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
