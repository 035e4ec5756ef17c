/**
 * Accounts and their API keys in the SQLite store: what authentication reads, and the writes that
 * change it. Every write that authentication would see calls `changed`, so the store's keys revision
 * moves (this connection's own commits do not move SQLite's `data_version`). The store delegates here.
 */
import { randomBytes } from 'node:crypto';
import { sqliteErrorCode, type SqliteDatabase } from './sqlite-driver';
import { ACCOUNT_COLUMNS } from './sqlite-console';
import { AccountExistsError, type Account, type AccountRole, type ApiKeyRecord, type Budget, type KeyIdentity, type KeyLimits, type NewKey, type OperatorLimits } from './access-store';
import { budgetText, networksToJson, operatorLimitsFromJson, operatorLimitsToJson, rowMappers, SQLITE_CODEC, type AccountRow, type KeyIdentityRow, type KeyRow, type SqliteColumns } from './rows';

// Listing order: creation time, then insertion order (rowid) for keys made in the same millisecond.
const KEY_COLUMNS = `k.id, k.account_id, k.name, k.prefix, k.last4, k.created_at, k.revoked_at, k.expires_at,
  CAST(k.spend_limit AS TEXT) AS spend_limit, CAST(k.spent AS TEXT) AS spent, k.models, k.rate_limits, k.budget, k.allowed_networks, k.operator_limits,
  CAST(k.session_budget AS TEXT) AS session_budget, k.member_account_id`;

/** Every statement of accounts and keys, prepared once after the schema exists. */
function prepareStatements(db: SqliteDatabase) {
  return {
    insertAccount: db.prepare<[AccountRow<SqliteColumns> & { password_hash: string | null }]>(
      `INSERT INTO accounts (id, name, email, role, disabled, created_at, password_hash)
       VALUES (@id, @name, @email, @role, @disabled, @created_at, @password_hash)`,
    ),
    accountByName: db.prepare<[string], AccountRow<SqliteColumns>>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE lower(name) = lower(?)`),
    accountById: db.prepare<[string], number>('SELECT 1 FROM accounts WHERE id = ?').pluck(),
    countAccounts: db.prepare<[], number>('SELECT count(*) FROM accounts').pluck(),
    insertKey: db.prepare<[Record<string, unknown>]>(
      `INSERT INTO api_keys (id, account_id, name, hash, prefix, last4, created_at, revoked_at, expires_at, spend_limit, models, rate_limits, budget,
                             allowed_networks, operator_limits, session_budget, member_account_id)
       VALUES (@id, @account_id, @name, @hash, @prefix, @last4, @created_at, @revoked_at, @expires_at, @spend_limit, @models, @rate_limits, @budget,
               @allowed_networks, @operator_limits, @session_budget, @member_account_id)`,
    ),
    accountRowById: db.prepare<[string], AccountRow<SqliteColumns>>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ?`),
    keyExists: db.prepare<[string], number>('SELECT 1 FROM api_keys WHERE id = ?').pluck(),
    setKeySpendLimit: db.prepare<[bigint | null, string]>('UPDATE api_keys SET spend_limit = ? WHERE id = ?'),
    setKeyModels: db.prepare<[string | null, string]>('UPDATE api_keys SET models = ? WHERE id = ?'),
    setKeyRateLimits: db.prepare<[string | null, string]>('UPDATE api_keys SET rate_limits = ? WHERE id = ?'),
    setKeyBudget: db.prepare<[string | null, string]>('UPDATE api_keys SET budget = ? WHERE id = ?'),
    setAccountBudget: db.prepare<[string | null, string]>('UPDATE accounts SET budget = ? WHERE id = ?'),
    setKeySessionBudget: db.prepare<[bigint | null, string]>('UPDATE api_keys SET session_budget = ? WHERE id = ?'),
    setAccountSessionBudget: db.prepare<[bigint | null, string]>('UPDATE accounts SET session_budget = ? WHERE id = ?'),
    setAccountOperatorLimits: db.prepare<[string | null, string]>('UPDATE accounts SET operator_limits = ? WHERE id = ?'),
    accountOperatorLimits: db.prepare<[string], string | null>('SELECT operator_limits FROM accounts WHERE id = ?').pluck(),
    setKeyNetworks: db.prepare<[string | null, string]>('UPDATE api_keys SET allowed_networks = ? WHERE id = ?'),
    setKeyOperatorLimits: db.prepare<[string | null, string]>('UPDATE api_keys SET operator_limits = ? WHERE id = ?'),
    allKeys: db.prepare<[], KeyRow<SqliteColumns>>(`SELECT ${KEY_COLUMNS} FROM api_keys k ORDER BY k.created_at, k.rowid`),
    keysOfAccount: db.prepare<[string], KeyRow<SqliteColumns>>(
      `SELECT ${KEY_COLUMNS} FROM api_keys k WHERE k.account_id = ? ORDER BY k.created_at, k.rowid`,
    ),
    // COALESCE keeps the first revocation time when a key is revoked twice.
    revokeKey: db.prepare<[number, string]>('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?'),
    keyIdentityByHash: db.prepare<[Buffer], KeyIdentityRow<SqliteColumns>>(
      `SELECT ${KEY_COLUMNS}, k.hash,
              a.name AS account_name, a.email AS account_email, a.role AS account_role,
              a.disabled AS account_disabled, a.created_at AS account_created_at, a.budget AS account_budget,
              CAST(a.session_budget AS TEXT) AS account_session_budget, a.operator_limits AS account_operator_limits,
              m.models AS member_models, m.rate_limits AS member_rate_limits, m.budget AS member_budget
         FROM api_keys k JOIN accounts a ON a.id = k.account_id
         LEFT JOIN memberships m ON m.organisation_id = k.account_id AND m.account_id = k.member_account_id
        WHERE k.hash = ?`,
    ),
  };
}

type Statements = ReturnType<typeof prepareStatements>;

/** Returns `prefix` followed by 16 random hex characters (64 bits): unguessable, short enough to type. */
function newId(prefix: 'acc_' | 'key_'): string {
  return prefix + randomBytes(8).toString('hex');
}

const { toAccount, toKeyIdentity, toKeyRecord } = rowMappers(SQLITE_CODEC);

function jsonOrNull(value: object | null): string | null {
  return value === null ? null : JSON.stringify(value);
}

export class SqliteKeys {
  private readonly sql: Statements;

  constructor(
    private readonly db: SqliteDatabase,
    /** Called after every write authentication would see. */
    private readonly changed: () => void,
  ) {
    this.sql = prepareStatements(db);
  }

  findAccountById(id: string): Account | null {
    const row = this.sql.accountRowById.get(id);
    return row === undefined ? null : toAccount(row);
  }

  setKeyLimits(id: string, limits: KeyLimits): boolean {
    const update = this.db.transaction(() => {
      if (this.sql.keyExists.get(id) === undefined) return false;
      if (limits.spendLimit !== undefined) this.sql.setKeySpendLimit.run(limits.spendLimit, id);
      if (limits.models !== undefined) this.sql.setKeyModels.run(jsonOrNull(limits.models), id);
      if (limits.rateLimits !== undefined) this.sql.setKeyRateLimits.run(jsonOrNull(limits.rateLimits), id);
      if (limits.budget !== undefined) this.sql.setKeyBudget.run(budgetText(limits.budget), id);
      if (limits.sessionBudget !== undefined) this.sql.setKeySessionBudget.run(limits.sessionBudget, id);
      if (limits.allowedNetworks !== undefined) this.sql.setKeyNetworks.run(networksToJson(limits.allowedNetworks), id);
      if (limits.operatorLimits !== undefined) this.sql.setKeyOperatorLimits.run(operatorLimitsToJson(limits.operatorLimits), id);
      return true;
    });
    const found = update.immediate();
    if (found) this.changed();
    return found;
  }

  setAccountBudget(accountId: string, budget: Budget | null): boolean {
    const { changes } = this.sql.setAccountBudget.run(budgetText(budget), accountId);
    // Cached keys carry their account's budget: the auth cache must look again.
    if (changes > 0) this.changed();
    return changes > 0;
  }

  setAccountSessionBudget(accountId: string, amount: bigint | null): boolean {
    const { changes } = this.sql.setAccountSessionBudget.run(amount, accountId);
    // Cached keys carry their account's session budget too.
    if (changes > 0) this.changed();
    return changes > 0;
  }

  setAccountOperatorLimits(accountId: string, limits: OperatorLimits | null): boolean {
    const { changes } = this.sql.setAccountOperatorLimits.run(operatorLimitsToJson(limits), accountId);
    // Cached keys carry their account's operator limits.
    if (changes > 0) this.changed();
    return changes > 0;
  }

  accountOperatorLimits(accountId: string): OperatorLimits | null {
    const text = this.sql.accountOperatorLimits.get(accountId);
    return text == null ? null : operatorLimitsFromJson(text);
  }

  createAccount(input: { name: string; role: AccountRole; email?: string | null; passwordHash?: string | null }): Account {
    const row: AccountRow<SqliteColumns> = {
      id: newId('acc_'),
      name: input.name,
      email: input.email?.toLowerCase() ?? null,
      role: input.role,
      disabled: 0,
      created_at: Date.now(),
      budget: null,
      session_budget: null,
    };
    try {
      this.sql.insertAccount.run({ ...row, password_hash: input.passwordHash ?? null });
    } catch (error) {
      if (sqliteErrorCode(error) === 'SQLITE_CONSTRAINT_UNIQUE') {
        const onEmail = (error as Error).message.includes('accounts.email');
        throw onEmail ? new AccountExistsError(row.email ?? '', 'email') : new AccountExistsError(input.name);
      }
      throw error;
    }
    this.changed();
    return toAccount(row);
  }

  findAccountByName(name: string): Account | null {
    const row = this.sql.accountByName.get(name);
    return row === undefined ? null : toAccount(row);
  }

  countAccounts(): number {
    return this.sql.countAccounts.get() ?? 0;
  }

  createKey(input: NewKey): ApiKeyRecord {
    // Checked here for a clear message; the foreign key would reject it too, but only as "constraint failed".
    if (this.sql.accountById.get(input.accountId) === undefined) {
      throw new Error(`no account with id "${input.accountId}"`);
    }
    const row: KeyRow<SqliteColumns> = {
      id: newId('key_'),
      account_id: input.accountId,
      name: input.name,
      prefix: input.prefix,
      last4: input.last4,
      created_at: Date.now(),
      revoked_at: null,
      expires_at: input.expiresAt?.getTime() ?? null,
      spend_limit: input.spendLimit === undefined || input.spendLimit === null ? null : String(input.spendLimit),
      spent: '0',
      models: jsonOrNull(input.models ?? null),
      rate_limits: jsonOrNull(input.rateLimits ?? null),
      budget: budgetText(input.budget ?? null),
      session_budget: input.sessionBudget == null ? null : String(input.sessionBudget),
      allowed_networks: networksToJson(input.allowedNetworks),
      operator_limits: operatorLimitsToJson(input.operatorLimits),
      member_account_id: input.memberAccountId ?? null,
    };
    this.sql.insertKey.run({ ...row, hash: input.hash, spend_limit: input.spendLimit ?? null, session_budget: input.sessionBudget ?? null });
    this.changed();
    return toKeyRecord(row);
  }

  listKeys(filter?: { accountId?: string }): ApiKeyRecord[] {
    const rows = filter?.accountId === undefined ? this.sql.allKeys.all() : this.sql.keysOfAccount.all(filter.accountId);
    return rows.map(toKeyRecord);
  }

  revokeKey(id: string): boolean {
    const { changes } = this.sql.revokeKey.run(Date.now(), id);
    if (changes > 0) this.changed();
    return changes > 0;
  }

  findKeyByHash(hash: Buffer): KeyIdentity | null {
    const row = this.sql.keyIdentityByHash.get(hash);
    if (row === undefined) return null;
    return toKeyIdentity(row);
  }
}
