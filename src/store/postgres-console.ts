/**
 * What the web console needs from the PostgreSQL store: the operator's account list, logins and
 * passwords, disabling accounts, console sessions and management tokens, the second factor. Each
 * function is one statement; the store bumps the key revision after the writes that change what
 * authentication reads (disabling an account), the trigger tells the other instances.
 */
import { randomBytes } from 'node:crypto';
import type { Pool } from 'pg';
import type { SecretKey } from '../auth/secret-key';
import { openFactorSecret, plaintextFactors, requireOpenable, sealFactorSecret, type StoredFactor } from './factor-secrets';
import type { Account, AccountLogin, AccountSummary, NewSession, SecondFactor, SessionKind, SessionRecord } from './store';
import { rowMappers, POSTGRES_CODEC, type AccountRow, type AccountSummaryRow, type PostgresColumns, type SessionAccountRow, type SessionRow } from './rows';

/** The columns of an `AccountRow`; never the password hash. */
export const ACCOUNT_COLUMNS = 'id, name, email, role, disabled, created_at, budget, session_budget::text AS session_budget';
const SESSION_COLUMNS = 's.id, s.account_id, s.kind, s.name, s.created_at, s.expires_at, s.last_used_at, s.user_agent';

const { toAccount, toAccountSummary, toSession, toSessionWithAccount } = rowMappers(POSTGRES_CODEC);

/** E-mails are stored and compared lower-cased, so they are unique whatever their case. */
export function normalizeEmail(email: string | null | undefined): string | null {
  return email === undefined || email === null ? null : email.toLowerCase();
}

export async function listAccounts(pool: Pool): Promise<AccountSummary[]> {
  const { rows } = await pool.query<AccountSummaryRow<PostgresColumns>>(
    `SELECT ${ACCOUNT_COLUMNS}, balance::text AS balance, held::text AS held FROM accounts ORDER BY created_at, seq`,
  );
  return rows.map(toAccountSummary);
}

export async function findLogin(pool: Pool, login: string): Promise<AccountLogin | null> {
  // One account's name may be another's e-mail; the exact name wins.
  const { rows } = await pool.query<AccountRow<PostgresColumns> & { password_hash: string | null }>(
    `SELECT ${ACCOUNT_COLUMNS}, password_hash FROM accounts
      WHERE lower(name) = lower($1) OR email = lower($1)
      ORDER BY (lower(name) = lower($1)) DESC LIMIT 1`,
    [login],
  );
  const row = rows[0];
  if (row === undefined) return null;
  return { account: toAccount(row), passwordHash: row.password_hash };
}

export async function setPassword(pool: Pool, accountId: string, passwordHash: string): Promise<boolean> {
  const { rowCount } = await pool.query('UPDATE accounts SET password_hash = $1 WHERE id = $2', [passwordHash, accountId]);
  return rowCount !== 0;
}

export async function setAccountDisabled(pool: Pool, accountId: string, disabled: boolean): Promise<boolean> {
  const { rowCount } = await pool.query('UPDATE accounts SET disabled = $1 WHERE id = $2', [disabled, accountId]);
  return rowCount !== 0;
}

export async function createSession(pool: Pool, input: NewSession): Promise<SessionRecord> {
  const row: SessionRow<PostgresColumns> = {
    id: 'ses_' + randomBytes(8).toString('hex'),
    account_id: input.accountId,
    kind: input.kind,
    name: input.name,
    created_at: new Date(),
    expires_at: input.expiresAt,
    last_used_at: null,
    user_agent: input.userAgent ?? null,
  };
  await pool.query('INSERT INTO sessions (id, hash, account_id, kind, name, created_at, expires_at, user_agent) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', [
    row.id, input.hash, row.account_id, row.kind, row.name, row.created_at, row.expires_at, row.user_agent,
  ]);
  return toSession(row);
}

export async function findSession(pool: Pool, hash: Buffer, now: Date): Promise<{ session: SessionRecord; account: Account } | null> {
  const { rows } = await pool.query<SessionAccountRow<PostgresColumns>>(
    `SELECT ${SESSION_COLUMNS},
            a.name AS account_name, a.email AS account_email, a.role AS account_role,
            a.disabled AS account_disabled, a.created_at AS account_created_at, a.budget AS account_budget,
            a.session_budget::text AS account_session_budget
       FROM sessions s JOIN accounts a ON a.id = s.account_id
      WHERE s.hash = $1 AND (s.expires_at IS NULL OR s.expires_at > $2)`,
    [hash, now],
  );
  const row = rows[0];
  if (row === undefined) return null;
  return toSessionWithAccount(row);
}

export async function deleteSession(pool: Pool, id: string, accountId: string): Promise<boolean> {
  const { rowCount } = await pool.query('DELETE FROM sessions WHERE id = $1 AND account_id = $2', [id, accountId]);
  return rowCount !== 0;
}

export async function listSessions(pool: Pool, accountId: string, kind: SessionKind): Promise<SessionRecord[]> {
  const { rows } = await pool.query<SessionRow<PostgresColumns>>(
    `SELECT ${SESSION_COLUMNS} FROM sessions s WHERE s.account_id = $1 AND s.kind = $2 ORDER BY s.created_at DESC, s.seq DESC`,
    [accountId, kind],
  );
  return rows.map(toSession);
}

/** Sessions expired at `now` (as `findSession` sees them); never those without an expiry. */
export async function deleteExpiredSessions(pool: Pool, now: Date): Promise<number> {
  const { rowCount } = await pool.query('DELETE FROM sessions WHERE expires_at <= $1', [now]);
  return rowCount ?? 0;
}

export async function endSessions(pool: Pool, accountId: string, except: string | null): Promise<number> {
  const { rowCount } = await pool.query('DELETE FROM sessions WHERE account_id = $1 AND id <> $2', [accountId, except ?? '']);
  return rowCount ?? 0;
}

export async function touchSession(pool: Pool, id: string, at: Date): Promise<void> {
  await pool.query('UPDATE sessions SET last_used_at = $1 WHERE id = $2', [at, id]);
}

// Two-factor sign-in on PostgreSQL: one statement each, or one transaction where two tables change.

export async function getSecondFactor(pool: Pool, key: SecretKey, accountId: string): Promise<SecondFactor | null> {
  const { rows } = await pool.query<{ secret: string; confirmed_at: Date | null; last_step: string | null }>(
    'SELECT secret, confirmed_at, last_step FROM second_factors WHERE account_id = $1',
    [accountId],
  );
  const row = rows[0];
  if (row === undefined) return null;
  return { secret: openFactorSecret(key, accountId, row.secret), confirmedAt: row.confirmed_at, lastStep: row.last_step === null ? null : Number(row.last_step) };
}

export async function beginSecondFactor(pool: Pool, key: SecretKey, accountId: string, secret: string): Promise<void> {
  await pool.query(
    `WITH gone AS (DELETE FROM recovery_codes WHERE account_id = $1)
     INSERT INTO second_factors (account_id, secret, created_at) VALUES ($1, $2, now())
     ON CONFLICT (account_id) DO UPDATE SET secret = excluded.secret, confirmed_at = NULL, last_step = NULL, created_at = excluded.created_at`,
    [accountId, sealFactorSecret(key, accountId, secret)],
  );
}

function storedFactors(pool: Pool): Promise<StoredFactor[]> {
  return pool.query<StoredFactor>('SELECT f.account_id, a.name, f.secret FROM second_factors f JOIN accounts a ON a.id = f.account_id').then(({ rows }) => rows);
}

/**
 * Seals the secrets an older version stored in plaintext. Each row changes only if it still holds
 * the plaintext read, so instances starting together never seal a row twice.
 */
export async function sealPlaintextFactors(pool: Pool, key: SecretKey): Promise<void> {
  for (const row of plaintextFactors(await storedFactors(pool))) {
    await pool.query('UPDATE second_factors SET secret = $2 WHERE account_id = $1 AND secret = $3', [row.account_id, sealFactorSecret(key, row.account_id, row.secret), row.secret]);
  }
}

export async function requireOpenableFactors(pool: Pool, key: SecretKey): Promise<void> {
  requireOpenable(key, await storedFactors(pool));
}

export async function confirmSecondFactor(pool: Pool, accountId: string, step: number, hashes: readonly Buffer[]): Promise<boolean> {
  const { rows } = await pool.query<{ confirmed: boolean }>(
    `WITH confirmed AS (
       UPDATE second_factors SET confirmed_at = now(), last_step = $2 WHERE account_id = $1 AND confirmed_at IS NULL RETURNING account_id
     ), gone AS (
       DELETE FROM recovery_codes WHERE account_id = $1 AND EXISTS (SELECT 1 FROM confirmed)
     ), added AS (
       INSERT INTO recovery_codes (account_id, hash) SELECT $1, hash FROM unnest($3::bytea[]) AS hash WHERE EXISTS (SELECT 1 FROM confirmed)
     )
     SELECT EXISTS (SELECT 1 FROM confirmed) AS confirmed`,
    [accountId, step, hashes],
  );
  return rows[0]?.confirmed === true;
}

export async function removeSecondFactor(pool: Pool, accountId: string): Promise<boolean> {
  const { rowCount } = await pool.query(
    `WITH gone AS (DELETE FROM recovery_codes WHERE account_id = $1) DELETE FROM second_factors WHERE account_id = $1`,
    [accountId],
  );
  return rowCount !== 0;
}

export async function useTotpStep(pool: Pool, accountId: string, step: number): Promise<boolean> {
  const { rowCount } = await pool.query(
    'UPDATE second_factors SET last_step = $2 WHERE account_id = $1 AND confirmed_at IS NOT NULL AND (last_step IS NULL OR last_step < $2)',
    [accountId, step],
  );
  return rowCount !== 0;
}

export async function useRecoveryCode(pool: Pool, accountId: string, hash: Buffer, at: Date): Promise<boolean> {
  const { rowCount } = await pool.query('UPDATE recovery_codes SET used_at = $3 WHERE account_id = $1 AND hash = $2 AND used_at IS NULL', [accountId, hash, at]);
  return rowCount !== 0;
}

export async function recoveryCodesLeft(pool: Pool, accountId: string): Promise<number> {
  const { rows } = await pool.query<{ left: number }>('SELECT count(*)::int AS left FROM recovery_codes WHERE account_id = $1 AND used_at IS NULL', [accountId]);
  return rows[0]?.left ?? 0;
}
