/**
 * The console's part of the SQLite store: accounts as the console lists and logs them in, sessions
 * and management tokens. Split from sqlite.ts so each file keeps one concern; the store delegates.
 */
import { randomBytes } from 'node:crypto';
import type { SecretKey } from '../auth/secret-key';
import { openFactorSecret, plaintextFactors, requireOpenable, sealFactorSecret, type StoredFactor } from './factor-secrets';
import type { SqliteDatabase } from './sqlite-driver';
import { rowMappers, SQLITE_CODEC, type AccountRow, type AccountSummaryRow, type SessionAccountRow, type SessionRow, type SqliteColumns } from './rows';
import type { Account, AccountLogin, AccountSummary, NewSession, SecondFactor, SessionKind, SessionRecord } from './store';

const { toAccount, toAccountSummary, toSession, toSessionWithAccount } = rowMappers(SQLITE_CODEC);

export const ACCOUNT_COLUMNS = 'id, name, email, role, disabled, created_at, budget, CAST(session_budget AS TEXT) AS session_budget';
const SESSION_COLUMNS = 's.id, s.account_id, s.kind, s.name, s.created_at, s.expires_at, s.last_used_at, s.user_agent';

function prepareStatements(db: SqliteDatabase) {
  return {
    listAccounts: db.prepare<[], AccountSummaryRow<SqliteColumns>>(
      `SELECT ${ACCOUNT_COLUMNS}, CAST(balance AS TEXT) AS balance, CAST(held AS TEXT) AS held FROM accounts ORDER BY created_at, rowid`,
    ),
    loginByName: db.prepare<[string], AccountRow<SqliteColumns> & { password_hash: string | null }>(
      `SELECT ${ACCOUNT_COLUMNS}, password_hash FROM accounts WHERE lower(name) = lower(?)`,
    ),
    loginByEmail: db.prepare<[string], AccountRow<SqliteColumns> & { password_hash: string | null }>(
      `SELECT ${ACCOUNT_COLUMNS}, password_hash FROM accounts WHERE email = ?`,
    ),
    setPassword: db.prepare<[string, string]>('UPDATE accounts SET password_hash = ? WHERE id = ?'),
    setDisabled: db.prepare<[number, string]>('UPDATE accounts SET disabled = ? WHERE id = ?'),
    insertSession: db.prepare<[Record<string, unknown>]>(
      `INSERT INTO sessions (id, hash, account_id, kind, name, created_at, expires_at, user_agent)
       VALUES (@id, @hash, @account_id, @kind, @name, @created_at, @expires_at, @user_agent)`,
    ),
    sessionByHash: db.prepare<[Buffer, number], SessionAccountRow<SqliteColumns>>(
      `SELECT ${SESSION_COLUMNS}, a.name AS account_name, a.email AS account_email, a.role AS account_role,
              a.disabled AS account_disabled, a.created_at AS account_created_at, a.budget AS account_budget,
              CAST(a.session_budget AS TEXT) AS account_session_budget
         FROM sessions s JOIN accounts a ON a.id = s.account_id
        WHERE s.hash = ? AND (s.expires_at IS NULL OR s.expires_at > ?)`,
    ),
    deleteSession: db.prepare<[string, string]>('DELETE FROM sessions WHERE id = ? AND account_id = ?'),
    sessionsOf: db.prepare<[string, SessionKind], SessionRow<SqliteColumns>>(
      `SELECT ${SESSION_COLUMNS} FROM sessions s WHERE s.account_id = ? AND s.kind = ? ORDER BY s.created_at DESC, s.rowid DESC`,
    ),
    deleteExpired: db.prepare<[number]>('DELETE FROM sessions WHERE expires_at IS NOT NULL AND expires_at <= ?'),
    endSessions: db.prepare<[string, string]>('DELETE FROM sessions WHERE account_id = ? AND id <> ?'),
    touchSession: db.prepare<[number, string]>('UPDATE sessions SET last_used_at = ? WHERE id = ?'),
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
      last_used_at: null,
      user_agent: input.userAgent ?? null,
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

  endSessions(accountId: string, except: string | null): number {
    return this.sql.endSessions.run(accountId, except ?? '').changes;
  }

  touchSession(id: string, at: Date): void {
    this.sql.touchSession.run(at.getTime(), id);
  }
}

/** Two-factor sign-in on SQLite: each method is one statement (or one transaction); secrets sealed under `key`. */
export class SqliteSecondFactors {
  private readonly sql;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly key: SecretKey,
  ) {
    this.sql = {
      all: db.prepare<[], StoredFactor>('SELECT f.account_id, a.name, f.secret FROM second_factors f JOIN accounts a ON a.id = f.account_id'),
      reseal: db.prepare<[string, string, string]>('UPDATE second_factors SET secret = ? WHERE account_id = ? AND secret = ?'),
      get: db.prepare<[string], { secret: string; confirmed_at: number | null; last_step: number | null }>(
        'SELECT secret, confirmed_at, last_step FROM second_factors WHERE account_id = ?',
      ),
      deleteCodes: db.prepare<[string]>('DELETE FROM recovery_codes WHERE account_id = ?'),
      deleteFactor: db.prepare<[string]>('DELETE FROM second_factors WHERE account_id = ?'),
      insert: db.prepare<[string, string, number]>('INSERT INTO second_factors (account_id, secret, created_at) VALUES (?, ?, ?)'),
      confirm: db.prepare<[number, number, string]>('UPDATE second_factors SET confirmed_at = ?, last_step = ? WHERE account_id = ? AND confirmed_at IS NULL'),
      insertCode: db.prepare<[string, Buffer]>('INSERT INTO recovery_codes (account_id, hash) VALUES (?, ?)'),
      useStep: db.prepare<[number, string, number]>(
        'UPDATE second_factors SET last_step = ? WHERE account_id = ? AND confirmed_at IS NOT NULL AND (last_step IS NULL OR last_step < ?)',
      ),
      useCode: db.prepare<[number, string, Buffer]>('UPDATE recovery_codes SET used_at = ? WHERE account_id = ? AND hash = ? AND used_at IS NULL'),
      codesLeft: db.prepare<[string], number>('SELECT count(*) FROM recovery_codes WHERE account_id = ? AND used_at IS NULL').pluck(),
    };
  }

  get(accountId: string): SecondFactor | null {
    const row = this.sql.get.get(accountId);
    if (row === undefined) return null;
    return { secret: openFactorSecret(this.key, accountId, row.secret), confirmedAt: row.confirmed_at === null ? null : new Date(row.confirmed_at), lastStep: row.last_step };
  }

  begin(accountId: string, secret: string): void {
    this.db.transaction(() => {
      this.sql.deleteCodes.run(accountId);
      this.sql.deleteFactor.run(accountId);
      this.sql.insert.run(accountId, sealFactorSecret(this.key, accountId, secret), Date.now());
    }).immediate();
  }

  /** Seals the secrets an older version stored in plaintext; how many there were. */
  sealPlaintext(): number {
    if (plaintextFactors(this.sql.all.all()).length === 0) return 0;
    return this.db.transaction(() => {
      // Read again under the write lock: another process may have sealed them meanwhile.
      const rows = plaintextFactors(this.sql.all.all());
      for (const row of rows) this.sql.reseal.run(sealFactorSecret(this.key, row.account_id, row.secret), row.account_id, row.secret);
      return rows.length;
    }).immediate();
  }

  /** Throws SecretKeyError when a secret does not open with this store's key. */
  requireOpenable(): void {
    requireOpenable(this.key, this.sql.all.all());
  }

  confirm(accountId: string, step: number, hashes: readonly Buffer[]): boolean {
    return this.db.transaction(() => {
      if (this.sql.confirm.run(Date.now(), step, accountId).changes === 0) return false;
      this.sql.deleteCodes.run(accountId);
      for (const hash of hashes) this.sql.insertCode.run(accountId, hash);
      return true;
    }).immediate();
  }

  remove(accountId: string): boolean {
    return this.db.transaction(() => {
      this.sql.deleteCodes.run(accountId);
      return this.sql.deleteFactor.run(accountId).changes > 0;
    }).immediate();
  }

  useStep(accountId: string, step: number): boolean {
    return this.sql.useStep.run(step, accountId, step).changes > 0;
  }

  useCode(accountId: string, hash: Buffer, at: Date): boolean {
    return this.sql.useCode.run(at.getTime(), accountId, hash).changes > 0;
  }

  codesLeft(accountId: string): number {
    return this.sql.codesLeft.get(accountId) ?? 0;
  }
}
