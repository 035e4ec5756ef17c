/**
 * The console's part of the SQLite store: accounts as the console lists and logs them in, sessions
 * and management tokens. Split from sqlite.ts so each file keeps one concern; the store delegates.
 */
import { randomBytes } from 'node:crypto';
import type { SqliteDatabase } from './sqlite-driver';
import { rowMappers, SQLITE_CODEC, type AccountRow, type AccountSummaryRow, type SessionAccountRow, type SessionRow, type SqliteColumns } from './rows';
import type { Account, AccountLogin, AccountSummary, NewSession, SessionKind, SessionRecord } from './store';

const { toAccount, toAccountSummary, toSession, toSessionWithAccount } = rowMappers(SQLITE_CODEC);

export const ACCOUNT_COLUMNS = 'id, name, email, role, disabled, created_at, budget';
const SESSION_COLUMNS = 's.id, s.account_id, s.kind, s.name, s.created_at, s.expires_at';

function prepareStatements(db: SqliteDatabase) {
  return {
    listAccounts: db.prepare<[], AccountSummaryRow<SqliteColumns>>(
      `SELECT ${ACCOUNT_COLUMNS}, CAST(balance AS TEXT) AS balance, CAST(held AS TEXT) AS held FROM accounts ORDER BY created_at, rowid`,
    ),
    loginByName: db.prepare<[string], AccountRow<SqliteColumns> & { password_hash: string | null }>(
      `SELECT ${ACCOUNT_COLUMNS}, password_hash FROM accounts WHERE name = ?`,
    ),
    loginByEmail: db.prepare<[string], AccountRow<SqliteColumns> & { password_hash: string | null }>(
      `SELECT ${ACCOUNT_COLUMNS}, password_hash FROM accounts WHERE email = ?`,
    ),
    setPassword: db.prepare<[string, string]>('UPDATE accounts SET password_hash = ? WHERE id = ?'),
    setDisabled: db.prepare<[number, string]>('UPDATE accounts SET disabled = ? WHERE id = ?'),
    insertSession: db.prepare<[Record<string, unknown>]>(
      `INSERT INTO sessions (id, hash, account_id, kind, name, created_at, expires_at)
       VALUES (@id, @hash, @account_id, @kind, @name, @created_at, @expires_at)`,
    ),
    sessionByHash: db.prepare<[Buffer, number], SessionAccountRow<SqliteColumns>>(
      `SELECT ${SESSION_COLUMNS}, a.name AS account_name, a.email AS account_email, a.role AS account_role,
              a.disabled AS account_disabled, a.created_at AS account_created_at, a.budget AS account_budget
         FROM sessions s JOIN accounts a ON a.id = s.account_id
        WHERE s.hash = ? AND (s.expires_at IS NULL OR s.expires_at > ?)`,
    ),
    deleteSession: db.prepare<[string, string]>('DELETE FROM sessions WHERE id = ? AND account_id = ?'),
    sessionsOf: db.prepare<[string, SessionKind], SessionRow<SqliteColumns>>(
      `SELECT ${SESSION_COLUMNS} FROM sessions s WHERE s.account_id = ? AND s.kind = ? ORDER BY s.created_at DESC, s.rowid DESC`,
    ),
    deleteExpired: db.prepare<[number]>('DELETE FROM sessions WHERE expires_at IS NOT NULL AND expires_at <= ?'),
  };
}

export class SqliteConsole {
  private readonly sql: ReturnType<typeof prepareStatements>;

  constructor(db: SqliteDatabase) {
    this.sql = prepareStatements(db);
  }

  listAccounts(): AccountSummary[] {
    return this.sql.listAccounts.all().map(toAccountSummary);
  }

  findLogin(login: string): AccountLogin | null {
    const row = this.sql.loginByName.get(login) ?? this.sql.loginByEmail.get(login.toLowerCase());
    return row === undefined ? null : { account: toAccount(row), passwordHash: row.password_hash };
  }

  setPassword(accountId: string, passwordHash: string): boolean {
    return this.sql.setPassword.run(passwordHash, accountId).changes > 0;
  }

  setAccountDisabled(accountId: string, disabled: boolean): boolean {
    return this.sql.setDisabled.run(disabled ? 1 : 0, accountId).changes > 0;
  }

  createSession(input: NewSession): SessionRecord {
    const row: SessionRow<SqliteColumns> = {
      id: `ses_${randomBytes(8).toString('hex')}`,
      account_id: input.accountId,
      kind: input.kind,
      name: input.name,
      created_at: Date.now(),
      expires_at: input.expiresAt?.getTime() ?? null,
    };
    this.sql.insertSession.run({ ...row, hash: input.hash });
    return toSession(row);
  }

  findSession(hash: Buffer, now: Date): { session: SessionRecord; account: Account } | null {
    const row = this.sql.sessionByHash.get(hash, now.getTime());
    if (row === undefined) return null;
    return toSessionWithAccount(row);
  }

  deleteSession(id: string, accountId: string): boolean {
    return this.sql.deleteSession.run(id, accountId).changes > 0;
  }

  listSessions(accountId: string, kind: SessionKind): SessionRecord[] {
    return this.sql.sessionsOf.all(accountId, kind).map(toSession);
  }

  deleteExpiredSessions(now: Date): number {
    return this.sql.deleteExpired.run(now.getTime()).changes;
  }
}
