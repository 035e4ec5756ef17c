/**
 * The embedded store: one SQLite file (node:sqlite, or better-sqlite3 on Node 20: see sqlite-driver.ts),
 * in WAL mode so that the server and a CLI command (`tollgate key revoke`) can use the same file at the
 * same time. Both bindings are synchronous;
 * the async methods of `Store` simply return settled promises, and every query here is an indexed
 * lookup that takes microseconds.
 */
import type { CardPaymentStore } from './payments';
import { SqlitePayments } from './sqlite-payments';
import type { RefusalStore } from './refusals';
import { SqliteRefusals } from './sqlite-refusals';
import type { RelayedResponseStore } from './relayed-responses';
import { SqliteRelayedResponses } from './sqlite-relayed-responses';
import { BUSY_TIMEOUT_MS, retryWhileBusy } from './sqlite-busy';
import { chargeJson, columnText } from './set-aside';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { makePrivateDir, tightenFiles } from '../private-files';
import { embeddedStoreKey, type SecretKey } from '../auth/secret-key';
import path from 'node:path';
import type { AuditFilter, AuditRecord, NewAuditEntry } from './audit';
import { SqliteAudit } from './sqlite-audit';
import { openSqlite, sqliteErrorCode, type SqliteDatabase, type SqliteStatement } from './sqlite-driver';
import { ACCOUNT_COLUMNS, SqliteConsole, SqliteSecondFactors } from './sqlite-console';
import { SqliteLedger } from './sqlite-ledger';
import {
  AccountExistsError,
  type Account,
  type AccountBalance,
  type AccountLogin,
  type AccountRole,
  type AccountSummary,
  type ApiKeyRecord,
  type ChargeFilter,
  type ChargeTotals,
  type ChargeRecord,
  type CreditRecord,
  type DailyUsage,
  type Hold,
  type HoldResult,
  type KeyActivity,
  type KeyLimits,
  type KeySpend,
  type KeyIdentity,
  type LedgerTotals,
  type NewCredit,
  type NewKey,
  type NewSession,
  type RedeemResult,
  type RedemptionCodeRecord,
  type RevisionFreshness,
  type SessionKind,
  type SecondFactor,
  type SessionRecord,
  type SetAsideCharge,
  type Store,
  type UsageSummaryQuery,
  type UsageSummaryRow,
  type AlertRecord,
  type Budget,
  type BudgetScope,
  type NewAlert,
} from './store';
import { applySqliteMigrations } from './migrations/sqlite';
import { budgetText, networksToJson, operatorLimitsToJson, rowMappers, SQLITE_CODEC, type AccountRow, type KeyIdentityRow, type KeyRow, type SqliteColumns } from './rows';

/** The file name SQLite understands as "no file, keep it in memory" (tests). */
export const SQLITE_MEMORY = ':memory:';

// Listing order: creation time, then insertion order (rowid) for keys made in the same millisecond.
const KEY_COLUMNS = `k.id, k.account_id, k.name, k.prefix, k.last4, k.created_at, k.revoked_at, k.expires_at,
  CAST(k.spend_limit AS TEXT) AS spend_limit, CAST(k.spent AS TEXT) AS spent, k.models, k.rate_limits, k.budget, k.allowed_networks, k.operator_limits,
  CAST(k.session_budget AS TEXT) AS session_budget`;

interface AlertRow {
  id: string;
  once: string;
  account_id: string;
  key_id: string | null;
  kind: 'budget' | 'balance';
  body: string;
  created_at: number;
  delivered_at: number | null;
  attempts: number;
}

/** Every statement the store runs, prepared once after the schema exists. */
function prepareStatements(db: SqliteDatabase) {
  return {
    insertAccount: db.prepare<[AccountRow<SqliteColumns> & { password_hash: string | null }]>(
      `INSERT INTO accounts (id, name, email, role, disabled, created_at, password_hash)
       VALUES (@id, @name, @email, @role, @disabled, @created_at, @password_hash)`,
    ),
    accountByName: db.prepare<[string], AccountRow<SqliteColumns>>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE lower(name) = lower(?)`),
    accountById: db.prepare<[string], number>('SELECT 1 FROM accounts WHERE id = ?').pluck(),
    countAccounts: db.prepare<[], number>('SELECT count(*) FROM accounts').pluck(),
    keysRevision: db.prepare<[], number>('SELECT revision FROM keys_revision WHERE id = 1').pluck(),
    insertKey: db.prepare<[Record<string, unknown>]>(
      `INSERT INTO api_keys (id, account_id, name, hash, prefix, last4, created_at, revoked_at, expires_at, spend_limit, models, rate_limits, budget,
                             allowed_networks, operator_limits, session_budget)
       VALUES (@id, @account_id, @name, @hash, @prefix, @last4, @created_at, @revoked_at, @expires_at, @spend_limit, @models, @rate_limits, @budget,
               @allowed_networks, @operator_limits, @session_budget)`,
    ),
    keySpend: db.prepare<[string], { spend_limit: string | null; spent: string }>(
      'SELECT CAST(spend_limit AS TEXT) AS spend_limit, CAST(spent AS TEXT) AS spent FROM api_keys WHERE id = ?',
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
    insertAlert: db.prepare<[string, string, string, string | null, string, string, number]>(
      `INSERT INTO budget_alerts (id, once, account_id, key_id, kind, body, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (once) DO NOTHING`,
    ),
    listAlerts: db.prepare<[{ account: string | null; undelivered: number; limit: number }], AlertRow>(
      `SELECT id, once, account_id, key_id, kind, body, created_at, delivered_at, attempts FROM budget_alerts
        WHERE (@account IS NULL OR account_id = @account) AND (@undelivered = 0 OR delivered_at IS NULL)
        ORDER BY created_at DESC, rowid DESC LIMIT @limit`,
    ),
    alertAttempted: db.prepare<[number | null, string]>('UPDATE budget_alerts SET attempts = attempts + 1, delivered_at = COALESCE(delivered_at, ?) WHERE id = ?'),
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
              CAST(a.session_budget AS TEXT) AS account_session_budget
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

const { toAccount, toKeyIdentity, toKeyRecord } = rowMappers(SQLITE_CODEC);

function jsonOrNull(value: object | null): string | null {
  return value === null ? null : JSON.stringify(value);
}

function isConstraintError(error: unknown, code: string): boolean {
  return sqliteErrorCode(error) === code;
}

/** Every call that may meet another process's lock; `migrate`, `ping` and `close` answer at once. */
const RETRIED_METHODS = [
  'migrate', 'findAccountById', 'keySpend', 'setKeyLimits', 'setAccountBudget', 'setAccountSessionBudget', 'periodSpend', 'sessionSpend', 'recordAlert', 'listAlerts', 'alertAttempted', 'listAccounts', 'findLogin', 'setPassword', 'setAccountDisabled',
  'createSession', 'findSession', 'deleteSession', 'listSessions', 'deleteExpiredSessions', 'endSessions', 'touchSession', 'dailyUsage', 'lastRequests',
  'verifySecretKey', 'getSecondFactor', 'beginSecondFactor', 'confirmSecondFactor', 'removeSecondFactor', 'useTotpStep', 'useRecoveryCode', 'recoveryCodesLeft',
  'holdFunds', 'recordCharges', 'setAsideCharge', 'listSetAsideCharges', 'releaseHolds', 'expiredHolds', 'credit',
  'balance', 'listCharges', 'chargeTotals', 'findCharge', 'usageSummary', 'keyActivity', 'listCredits', 'ledgerTotals', 'createRedemptionCodes', 'redeemCode', 'listRedemptionCodes',
  'createAccount', 'findAccountByName', 'countAccounts', 'createKey', 'listKeys', 'revokeKey', 'findKeyByHash',
] as const satisfies readonly (keyof SqliteStore)[];

/** Every payments call may meet another process's lock too (the CLI's reconcile). */
const PAYMENT_METHODS = [
  'createOrder', 'createCheckoutOrder', 'createRechargeOrder', 'findOrder', 'listOrders', 'updateOrder', 'creditOrder', 'refundOrder', 'disputeOrder',
  'disputeWon', 'claimEvent', 'finishEvent', 'releaseEvent', 'seenEvent', 'debitAccount', 'movementTotals', 'listDebits', 'profile', 'saveProfile', 'listAutoRecharge', 'findOrderByPaymentIntent', 'takeLease',
] as const satisfies readonly (keyof CardPaymentStore)[];

/** The `Store` on one SQLite file (or `:memory:`). Call `migrate()` before anything else. */

export class SqliteStore implements Store {
  readonly shared = false;
  readonly durable: boolean;
  readonly payments: CardPaymentStore;
  readonly refusals: RefusalStore;
  readonly relayedResponses: RelayedResponseStore;
  private readonly db: SqliteDatabase;
  private readonly dataVersion: SqliteStatement<[], number>;
  private readonly selectOne: SqliteStatement<[], number>;
  private statements: Statements | null = null;
  private ledgerPart: SqliteLedger | null = null;
  private consolePart: SqliteConsole | null = null;
  private factorsPart: SqliteSecondFactors | null = null;
  private secretKeyPart: SecretKey | null = null;
  private auditPart: SqliteAudit | null = null;
  /** Bumped by this connection's own key and account writes, which `data_version` does not count. */
  private localRevision = 0;
  /** `data_version` when `sharedRevision` was read; null before the first read. */
  private seenDataVersion: number | null = null;
  /** The keys_revision row: every process's key and account changes. */
  private sharedRevision = 0;
  /** Bumped by this connection's own credits and redemptions, which `data_version` does not count either. */
  private localFundsRevision = 0;
  /** `data_version` as read in the current event-loop turn (asOf 'turn'); null until read in it. */
  private turnDataVersion: number | null = null;
  private readonly endTurn = (): void => {
    this.turnDataVersion = null;
  };

  /**
   * Opens (and creates, with its folder) the database file; `:memory:` for a private in-memory store.
   * `env` holds TOLLGATE_SECRET_KEY, read by `migrate()` (auth/secret-key.ts).
   */
  constructor(
    readonly filename: string,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.durable = filename !== SQLITE_MEMORY;
    if (filename !== SQLITE_MEMORY) makePrivateDir(path.dirname(path.resolve(filename)));
    const isNew = filename !== SQLITE_MEMORY && !existsSync(filename);
    this.db = openSqlite(filename);
    // A database this process made is tightened before SQLite makes its -wal and -shm files from its mode.
    if (isNew) tightenFiles(filename, `${filename}-wal`, `${filename}-shm`);
    // WAL lets readers (the server) and a writer (the CLI) work at once. NORMAL is durable across a
    // process crash (kill -9) in WAL mode and only risks the last commits on power loss. FULL would
    // fsync at every ledger batch, and the synchronous binding would block the event loop for each fsync: the
    // docs/billing.md states the trade (power loss may cost the commits not yet checkpointed).
    this.db.exec('PRAGMA journal_mode = WAL');
    this.db.exec('PRAGMA synchronous = NORMAL');
    // Short: a lock held elsewhere is waited for asynchronously (sqlite-busy.ts), never on the event loop.
    this.db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    this.db.exec('PRAGMA foreign_keys = ON');
    // Changes whenever ANOTHER connection commits to the file; our own commits leave it alone.
    this.dataVersion = this.db.prepare<[], number>('PRAGMA data_version').pluck();
    this.selectOne = this.db.prepare<[], number>('SELECT 1').pluck();
    retryWhileBusy<SqliteStore>(this, RETRIED_METHODS);
    this.payments = new SqlitePayments(this.db, () => (this.localFundsRevision += 1));
    retryWhileBusy<CardPaymentStore>(this.payments, PAYMENT_METHODS);
    this.refusals = new SqliteRefusals(this.db);
    retryWhileBusy<RefusalStore>(this.refusals, ['record', 'list', 'summary']);
    this.relayedResponses = new SqliteRelayedResponses(this.db);
    retryWhileBusy<RelayedResponseStore>(this.relayedResponses, ['record', 'relayedTo']);
  }

  /** The prepared statements; made on first use because they need the tables `migrate()` creates. */
  private get sql(): Statements {
    this.statements ??= prepareStatements(this.db);
    return this.statements;
  }

  private get ledger(): SqliteLedger {
    this.ledgerPart ??= new SqliteLedger(this.db);
    return this.ledgerPart;
  }

  private get factors(): SqliteSecondFactors {
    this.factorsPart ??= new SqliteSecondFactors(this.db, this.secretKey);
    return this.factorsPart;
  }

  /** The key TOTP secrets are sealed with: TOLLGATE_SECRET_KEY, else the key file beside the database. */
  get secretKey(): SecretKey {
    if (this.secretKeyPart === null) throw new Error('the store has no secret key before migrate()');
    return this.secretKeyPart;
  }

  private get console(): SqliteConsole {
    this.consolePart ??= new SqliteConsole(this.db);
    return this.consolePart;
  }

  private get audit(): SqliteAudit {
    this.auditPart ??= new SqliteAudit(this.db);
    return this.auditPart;
  }

  async migrate(): Promise<void> {
    applySqliteMigrations(this.db);
    this.secretKeyPart ??= embeddedStoreKey(this.durable ? this.filename : null, this.env);
    this.factors.sealPlaintext();
  }

  async verifySecretKey(): Promise<void> {
    this.factors.requireOpenable();
  }

  async appendAudit(entry: NewAuditEntry): Promise<AuditRecord> {
    return this.audit.append(entry);
  }

  async listAudit(filter: AuditFilter): Promise<AuditRecord[]> {
    return this.audit.list(filter);
  }

  async findAccountById(id: string): Promise<Account | null> {
    const row = this.sql.accountRowById.get(id);
    return row === undefined ? null : toAccount(row);
  }

  async keySpend(keyId: string): Promise<KeySpend | null> {
    const row = this.sql.keySpend.get(keyId);
    return row === undefined ? null : { spendLimit: row.spend_limit === null ? null : BigInt(row.spend_limit), spent: BigInt(row.spent) };
  }

  async setKeyLimits(id: string, limits: KeyLimits): Promise<boolean> {
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
    if (found) this.localRevision += 1;
    return found;
  }

  async setAccountBudget(accountId: string, budget: Budget | null): Promise<boolean> {
    const { changes } = this.sql.setAccountBudget.run(budgetText(budget), accountId);
    // Cached keys carry their account's budget: the auth cache must look again.
    if (changes > 0) this.localRevision += 1;
    return changes > 0;
  }

  async setAccountSessionBudget(accountId: string, amount: bigint | null): Promise<boolean> {
    const { changes } = this.sql.setAccountSessionBudget.run(amount, accountId);
    // Cached keys carry their account's session budget too.
    if (changes > 0) this.localRevision += 1;
    return changes > 0;
  }

  async recordAlert(alert: NewAlert): Promise<boolean> {
    const { id, once, accountId, keyId, kind, body, createdAt } = alert;
    return this.sql.insertAlert.run(id, once, accountId, keyId, kind, body, createdAt.getTime()).changes > 0;
  }

  async listAlerts(filter: { accountId?: string; undelivered?: boolean; limit?: number }): Promise<AlertRecord[]> {
    const rows = this.sql.listAlerts.all({ account: filter.accountId ?? null, undelivered: filter.undelivered === true ? 1 : 0, limit: filter.limit ?? 100 });
    return rows.map((row) => ({
      id: row.id,
      once: row.once,
      accountId: row.account_id,
      keyId: row.key_id,
      kind: row.kind,
      body: row.body,
      createdAt: new Date(row.created_at),
      deliveredAt: row.delivered_at === null ? null : new Date(row.delivered_at),
      attempts: row.attempts,
    }));
  }

  async alertAttempted(id: string, delivered: boolean, at: Date): Promise<void> {
    this.sql.alertAttempted.run(delivered ? at.getTime() : null, id);
  }

  async periodSpend(scope: BudgetScope, id: string, since: Date, until: Date): Promise<bigint> {
    return this.ledger.periodSpend(scope, id, since, until);
  }

  async sessionSpend(scope: BudgetScope, id: string, sessionId: string): Promise<bigint> {
    return this.ledger.sessionSpend(scope, id, sessionId);
  }

  async listAccounts(): Promise<AccountSummary[]> {
    return this.console.listAccounts();
  }

  async findLogin(login: string): Promise<AccountLogin | null> {
    return this.console.findLogin(login);
  }

  async setPassword(accountId: string, passwordHash: string): Promise<boolean> {
    return this.console.setPassword(accountId, passwordHash);
  }

  async setAccountDisabled(accountId: string, disabled: boolean): Promise<boolean> {
    const changed = this.console.setAccountDisabled(accountId, disabled);
    // Cached keys carry their account's flag: the auth cache must look again.
    if (changed) this.localRevision += 1;
    return changed;
  }

  async createSession(input: NewSession): Promise<SessionRecord> {
    return this.console.createSession(input);
  }

  async findSession(hash: Buffer, now: Date): Promise<{ session: SessionRecord; account: Account } | null> {
    return this.console.findSession(hash, now);
  }

  async deleteSession(id: string, accountId: string): Promise<boolean> {
    return this.console.deleteSession(id, accountId);
  }

  async listSessions(accountId: string, kind: SessionKind): Promise<SessionRecord[]> {
    return this.console.listSessions(accountId, kind);
  }

  async deleteExpiredSessions(now: Date): Promise<number> {
    return this.console.deleteExpiredSessions(now);
  }

  async endSessions(accountId: string, except: string | null = null): Promise<number> {
    return this.console.endSessions(accountId, except);
  }

  async touchSession(id: string, at: Date): Promise<void> {
    this.console.touchSession(id, at);
  }

  async getSecondFactor(accountId: string): Promise<SecondFactor | null> {
    return this.factors.get(accountId);
  }

  async beginSecondFactor(accountId: string, secret: string): Promise<void> {
    this.factors.begin(accountId, secret);
  }

  async confirmSecondFactor(accountId: string, step: number, recoveryHashes: readonly Buffer[]): Promise<boolean> {
    return this.factors.confirm(accountId, step, recoveryHashes);
  }

  async removeSecondFactor(accountId: string): Promise<boolean> {
    return this.factors.remove(accountId);
  }

  async useTotpStep(accountId: string, step: number): Promise<boolean> {
    return this.factors.useStep(accountId, step);
  }

  async useRecoveryCode(accountId: string, hash: Buffer, at: Date): Promise<boolean> {
    return this.factors.useCode(accountId, hash, at);
  }

  async recoveryCodesLeft(accountId: string): Promise<number> {
    return this.factors.codesLeft(accountId);
  }

  async dailyUsage(accountId: string | null, since: Date): Promise<DailyUsage[]> {
    return this.ledger.dailyUsage(accountId, since);
  }

  async lastRequests(): Promise<ReadonlyMap<string, Date>> {
    return this.ledger.lastRequests();
  }

  async holdFunds(hold: Hold): Promise<HoldResult> {
    return this.ledger.holdFunds(hold);
  }

  async recordCharges(charges: readonly ChargeRecord[]): Promise<number> {
    return this.ledger.recordCharges(charges);
  }

  async setAsideCharge(charge: ChargeRecord, error: string): Promise<void> {
    this.db
      .prepare('INSERT INTO set_aside_charges (request_id, account_id, error, record, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (request_id) DO NOTHING')
      .run(columnText(charge.requestId), columnText(charge.accountId), columnText(error, 2000), chargeJson(charge), Date.now());
  }

  async listSetAsideCharges(limit = 100): Promise<SetAsideCharge[]> {
    const rows = this.db
      .prepare<[number], { request_id: string; account_id: string; error: string; record: string; created_at: number }>(
        'SELECT request_id, account_id, error, record, created_at FROM set_aside_charges ORDER BY created_at DESC, request_id LIMIT ?',
      )
      .all(limit);
    return rows.map((row) => ({ requestId: row.request_id, accountId: row.account_id, error: row.error, record: row.record, createdAt: new Date(row.created_at) }));
  }

  async releaseHolds(requestIds: readonly string[]): Promise<number> {
    return this.ledger.releaseHolds(requestIds);
  }

  async expiredHolds(now: Date, limit: number): Promise<Hold[]> {
    return this.ledger.expiredHolds(now, limit);
  }

  async credit(input: NewCredit): Promise<CreditRecord> {
    const credit = this.ledger.credit(input);
    this.localFundsRevision += 1;
    return credit;
  }

  async balance(accountId: string): Promise<AccountBalance> {
    return this.ledger.balance(accountId);
  }

  async listCharges(filter: ChargeFilter): Promise<ChargeRecord[]> {
    return this.ledger.listCharges(filter);
  }

  async chargeTotals(filter: ChargeFilter): Promise<ChargeTotals> {
    return this.ledger.chargeTotals(filter);
  }

  async findCharge(requestId: string): Promise<ChargeRecord | null> {
    return this.ledger.findCharge(requestId);
  }

  async usageSummary(query: UsageSummaryQuery): Promise<UsageSummaryRow[]> {
    return this.ledger.usageSummary(query);
  }

  async keyActivity(accountId: string, dayStart: Date, monthStart: Date): Promise<KeyActivity[]> {
    return this.ledger.keyActivity(accountId, dayStart, monthStart);
  }

  async listCredits(accountId: string, limit?: number): Promise<CreditRecord[]> {
    return this.ledger.listCredits(accountId, limit);
  }

  async ledgerTotals(): Promise<LedgerTotals[]> {
    return this.ledger.ledgerTotals();
  }

  async createRedemptionCodes(input: { hashes: readonly Buffer[]; amount: bigint; createdBy: string | null; expiresAt: Date | null }): Promise<RedemptionCodeRecord[]> {
    return this.ledger.createRedemptionCodes(input);
  }

  async redeemCode(hash: Buffer, accountId: string, actor: string | null): Promise<RedeemResult> {
    const result = this.ledger.redeemCode(hash, accountId, actor);
    this.localFundsRevision += 1;
    return result;
  }

  async listRedemptionCodes(limit?: number): Promise<RedemptionCodeRecord[]> {
    return this.ledger.listRedemptionCodes(limit);
  }

  async createAccount(input: { name: string; role: AccountRole; email?: string | null; passwordHash?: string | null }): Promise<Account> {
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
      if (isConstraintError(error, 'SQLITE_CONSTRAINT_UNIQUE')) {
        const onEmail = (error as Error).message.includes('accounts.email');
        throw onEmail ? new AccountExistsError(row.email ?? '', 'email') : new AccountExistsError(input.name);
      }
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
    };
    this.sql.insertKey.run({ ...row, hash: input.hash, spend_limit: input.spendLimit ?? null, session_budget: input.sessionBudget ?? null });
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
    return toKeyIdentity(row);
  }

  keysRevision(asOf: RevisionFreshness = 'now'): number {
    // Another process committed: the revision row says whether it touched keys or accounts (most
    // commits are other workers' holds and charges, which must not empty the key cache).
    const dataVersion = this.readDataVersion(asOf);
    if (dataVersion !== this.seenDataVersion) {
      this.seenDataVersion = dataVersion;
      this.sharedRevision = this.sql.keysRevision.get() ?? 0;
    }
    // Both parts only grow, so their sum changes whenever either does.
    return this.sharedRevision + this.localRevision;
  }

  fundsRevision(asOf: RevisionFreshness = 'now'): number {
    return this.readDataVersion(asOf) + this.localFundsRevision;
  }

  /**
   * `PRAGMA data_version`: each read is a read transaction, with its WAL lock calls (two `fcntl`). The
   * request path asks for it twice per request (auth, the hold), both 'turn': read once per event-loop
   * turn for every request the turn serves, or taken from what an exact read of the same turn found.
   */
  private readDataVersion(asOf: RevisionFreshness): number {
    if (asOf === 'turn' && this.turnDataVersion !== null) return this.turnDataVersion;
    const version = this.dataVersion.get() ?? 0;
    // An exact read serves the rest of the turn too: 'turn' asks for at least the turn's start, and a
    // hold's exact read often comes before the next request's auth in the same turn.
    if (this.turnDataVersion === null) setImmediate(this.endTurn);
    this.turnDataVersion = version;
    return version;
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
