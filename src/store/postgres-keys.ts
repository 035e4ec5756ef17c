/**
 * Accounts and their API keys in the PostgreSQL store: what authentication reads, and the writes that
 * change it. The store tells the other instances of each change that authentication would see (the
 * keys listener's bump); these functions only read and write.
 */
import { randomBytes } from 'node:crypto';
import type { Pool } from 'pg';
import { AccountExistsError, type Account, type AccountRole, type ApiKeyRecord, type Budget, type KeyIdentity, type KeyLimits, type KeyRateLimits, type NewKey, type OperatorLimits } from './access-store';
import { ACCOUNT_COLUMNS, normalizeEmail } from './postgres-console';
import { budgetText, networksToJson, operatorLimitsFromJson, operatorLimitsToJson, rowMappers, POSTGRES_CODEC, type AccountRow, type KeyIdentityRow, type KeyRow, type PostgresColumns } from './rows';

/** How a key's limits are stored: money as text, models as TEXT[], rate limits as JSON text. */
const spendLimitParam = (value: bigint | null | undefined): string | null => (value === undefined || value === null ? null : String(value));
const modelsParam = (value: readonly string[] | null | undefined): string[] | null => (value === undefined || value === null ? null : [...value]);
const rateLimitsParam = (value: KeyRateLimits | null | undefined): string | null =>
  value === undefined || value === null ? null : JSON.stringify(value);

const UNIQUE_VIOLATION = '23505';

const KEY_COLUMNS = `k.id, k.account_id, k.name, k.prefix, k.last4, k.created_at, k.revoked_at, k.expires_at,
  k.spend_limit, k.spent, k.models, k.rate_limits, k.budget, k.allowed_networks, k.operator_limits, k.session_budget::text AS session_budget, k.member_account_id`;

/** Returns `prefix` followed by 16 random hex characters (64 bits), like the SQLite store's ids. */
function newId(prefix: 'acc_' | 'key_'): string {
  return prefix + randomBytes(8).toString('hex');
}

const { toAccount, toKeyIdentity, toKeyRecord } = rowMappers(POSTGRES_CODEC);

export async function createAccount(pool: Pool, input: { name: string; role: AccountRole; email?: string | null; passwordHash?: string | null }): Promise<Account> {
  const row: AccountRow<PostgresColumns> = {
    id: newId('acc_'),
    name: input.name,
    email: normalizeEmail(input.email),
    role: input.role,
    disabled: false,
    created_at: new Date(),
    budget: null,
    session_budget: null,
  };
  try {
    await pool.query('INSERT INTO accounts (id, name, email, role, disabled, created_at, password_hash) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
      row.id, row.name, row.email, row.role, row.disabled, row.created_at, input.passwordHash ?? null,
    ]);
  } catch (error) {
    const { code, constraint } = error as { code?: unknown; constraint?: unknown };
    if (code === UNIQUE_VIOLATION) {
      throw constraint === 'accounts_email' ? new AccountExistsError(row.email ?? '', 'email') : new AccountExistsError(input.name);
    }
    throw error;
  }
  return toAccount(row);
}

export async function findAccountByName(pool: Pool, name: string): Promise<Account | null> {
  const { rows } = await pool.query<AccountRow<PostgresColumns>>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE lower(name) = lower($1)`, [name]);
  return rows.length === 0 ? null : toAccount(rows[0]);
}

export async function findAccountById(pool: Pool, id: string): Promise<Account | null> {
  const { rows } = await pool.query<AccountRow<PostgresColumns>>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = $1`, [id]);
  return rows.length === 0 ? null : toAccount(rows[0]);
}

export async function countAccounts(pool: Pool): Promise<number> {
  const { rows } = await pool.query<{ count: string }>('SELECT count(*) AS count FROM accounts');
  return Number(rows[0].count);
}

/** False when no such account exists. */
export async function setAccountBudget(pool: Pool, accountId: string, budget: Budget | null): Promise<boolean> {
  const { rowCount } = await pool.query('UPDATE accounts SET budget = $2 WHERE id = $1', [accountId, budgetText(budget)]);
  return rowCount !== 0;
}

/** False when no such account exists. */
export async function setAccountSessionBudget(pool: Pool, accountId: string, amount: bigint | null): Promise<boolean> {
  const { rowCount } = await pool.query('UPDATE accounts SET session_budget = $2 WHERE id = $1', [accountId, spendLimitParam(amount)]);
  return rowCount !== 0;
}

export async function createKey(pool: Pool, input: NewKey): Promise<ApiKeyRecord> {
  // Checked here for a clear message; the foreign key would reject it too, but only as a constraint name.
  if ((await findAccountById(pool, input.accountId)) === null) {
    throw new Error(`no account with id "${input.accountId}"`);
  }
  const row: KeyRow<PostgresColumns> = {
    id: newId('key_'),
    account_id: input.accountId,
    name: input.name,
    prefix: input.prefix,
    last4: input.last4,
    created_at: new Date(),
    revoked_at: null,
    expires_at: input.expiresAt ?? null,
    spend_limit: spendLimitParam(input.spendLimit),
    spent: '0',
    models: modelsParam(input.models),
    rate_limits: rateLimitsParam(input.rateLimits),
    budget: budgetText(input.budget ?? null),
    session_budget: spendLimitParam(input.sessionBudget),
    allowed_networks: networksToJson(input.allowedNetworks),
    operator_limits: operatorLimitsToJson(input.operatorLimits),
    member_account_id: input.memberAccountId ?? null,
  };
  await pool.query(
    `INSERT INTO api_keys (id, account_id, name, hash, prefix, last4, created_at, revoked_at, expires_at, spend_limit, models, rate_limits, budget,
                           allowed_networks, operator_limits, session_budget, member_account_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
    [
      row.id, row.account_id, row.name, input.hash, row.prefix, row.last4, row.created_at, row.revoked_at, row.expires_at,
      row.spend_limit, row.models, row.rate_limits, row.budget, row.allowed_networks, row.operator_limits, row.session_budget, row.member_account_id,
    ],
  );
  return toKeyRecord(row);
}

export async function listKeys(pool: Pool, filter?: { accountId?: string }): Promise<ApiKeyRecord[]> {
  const { rows } =
    filter?.accountId === undefined
      ? await pool.query<KeyRow<PostgresColumns>>(`SELECT ${KEY_COLUMNS} FROM api_keys k ORDER BY k.created_at, k.seq`)
      : await pool.query<KeyRow<PostgresColumns>>(`SELECT ${KEY_COLUMNS} FROM api_keys k WHERE k.account_id = $1 ORDER BY k.created_at, k.seq`, [
          filter.accountId,
        ]);
  return rows.map(toKeyRecord);
}

/** False when no such key exists. */
export async function revokeKey(pool: Pool, id: string): Promise<boolean> {
  // COALESCE keeps the first revocation time when a key is revoked twice.
  const { rowCount } = await pool.query('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2', [new Date(), id]);
  return rowCount !== 0;
}

export async function findKeyByHash(pool: Pool, hash: Buffer): Promise<KeyIdentity | null> {
  const { rows } = await pool.query<KeyIdentityRow<PostgresColumns>>(
    `SELECT ${KEY_COLUMNS}, k.hash,
            a.name AS account_name, a.email AS account_email, a.role AS account_role,
            a.disabled AS account_disabled, a.created_at AS account_created_at, a.budget AS account_budget,
            a.session_budget::text AS account_session_budget, a.operator_limits AS account_operator_limits,
            m.models AS member_models, m.rate_limits AS member_rate_limits, m.budget AS member_budget
       FROM api_keys k JOIN accounts a ON a.id = k.account_id
       LEFT JOIN memberships m ON m.organisation_id = k.account_id AND m.account_id = k.member_account_id
      WHERE k.hash = $1`,
    [hash],
  );
  const row = rows[0];
  if (row === undefined) return null;
  return toKeyIdentity(row);
}

/**
 * Sets only the limits given (an absent field keeps its value, null clears it). `unchanged`: the key
 * exists but nothing was given, so there is no change to announce.
 */
export async function setKeyLimits(pool: Pool, id: string, limits: KeyLimits): Promise<'changed' | 'unchanged' | 'unknown'> {
  const params: unknown[] = [id];
  const set: string[] = [];
  const assign = (column: string, value: unknown) => {
    params.push(value);
    set.push(`${column} = $${params.length}`);
  };
  if (limits.spendLimit !== undefined) assign('spend_limit', spendLimitParam(limits.spendLimit));
  if (limits.models !== undefined) assign('models', modelsParam(limits.models));
  if (limits.rateLimits !== undefined) assign('rate_limits', rateLimitsParam(limits.rateLimits));
  if (limits.budget !== undefined) assign('budget', budgetText(limits.budget));
  if (limits.sessionBudget !== undefined) assign('session_budget', spendLimitParam(limits.sessionBudget));
  if (limits.allowedNetworks !== undefined) assign('allowed_networks', networksToJson(limits.allowedNetworks));
  if (limits.operatorLimits !== undefined) assign('operator_limits', operatorLimitsToJson(limits.operatorLimits));
  if (set.length === 0) {
    const { rowCount } = await pool.query('SELECT 1 FROM api_keys WHERE id = $1', params);
    return rowCount === 0 ? 'unknown' : 'unchanged';
  }
  const { rowCount } = await pool.query(`UPDATE api_keys SET ${set.join(', ')} WHERE id = $1`, params);
  return rowCount === 0 ? 'unknown' : 'changed';
}

/** False when no such account exists. */
export async function setAccountOperatorLimits(pool: Pool, accountId: string, limits: OperatorLimits | null): Promise<boolean> {
  const { rowCount } = await pool.query('UPDATE accounts SET operator_limits = $1 WHERE id = $2', [operatorLimitsToJson(limits), accountId]);
  return rowCount !== 0;
}

export async function accountOperatorLimits(pool: Pool, accountId: string): Promise<OperatorLimits | null> {
  const { rows } = await pool.query<{ operator_limits: string | null }>('SELECT operator_limits FROM accounts WHERE id = $1', [accountId]);
  const text = rows[0]?.operator_limits;
  return text == null ? null : operatorLimitsFromJson(text);
}
