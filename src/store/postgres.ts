/**
 * The shared store: PostgreSQL through a `pg` pool, for several gateway instances (and the CLI) at
 * once. Every wait is bounded by the configuration: acquiring a connection (connect_timeout_ms), each
 * statement (statement_timeout_ms on the server, a little more on the client for a dead network), so
 * a slow or unreachable database turns into an error the caller can answer with 503, never a hang.
 */
import type { CardPaymentStore } from './payments';
import { PostgresPayments } from './postgres-payments';
import type { RefusalStore } from './refusals';
import { PostgresRefusals } from './postgres-refusals';
import type { RelayedResponseStore } from './relayed-responses';
import { PostgresRelayedResponses } from './postgres-relayed-responses';
import { randomBytes } from 'node:crypto';
import { Client, Pool, type PoolConfig } from 'pg';
import type { StoreConfig } from '../config/types';
import type { AuditFilter, AuditRecord, NewAuditEntry } from './audit';
import * as auditQueries from './postgres-audit';
import * as consoleQueries from './postgres-console';
import * as usageQueries from './postgres-usage';
import { ACCOUNT_COLUMNS, modelsParam, normalizeEmail, rateLimitsParam, spendLimitParam } from './postgres-console';
import { PostgresLedger } from './postgres-ledger';
import { KeyChangeListener } from './postgres-revision';
import { applyPostgresMigrations } from './migrations/postgres';
import { retryTerminatedConnections } from './postgres-tx';
import { sharedStoreKey, type SecretKey } from '../auth/secret-key';
import { chargeJson, columnText } from './set-aside';
import { budgetText, networksToJson, operatorLimitsToJson, rowMappers, POSTGRES_CODEC, type AccountRow, type KeyIdentityRow, type KeyRow, type PostgresColumns } from './rows';
import {
  AccountExistsError,
  type Account,
  type AccountBalance,
  type AccountLogin,
  type AccountRole,
  type AccountSummary,
  type ApiKeyRecord,
  type AlertRecord,
  type Budget,
  type BudgetScope,
  type NewAlert,
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
  type SessionKind,
  type SecondFactor,
  type SessionRecord,
  type SetAsideCharge,
  type Store,
  type UsageSummaryQuery,
  type UsageSummaryRow,
} from './store';

export type PostgresStoreConfig = Pick<StoreConfig, 'url' | 'connect_timeout_ms' | 'statement_timeout_ms' | 'pool_size'>;

/**
 * The client-side query timeout is the server's statement timeout plus this: the server cancels a slow
 * statement first and keeps the connection; the client's timer only fires when no answer can come
 * (network gone), and the connection is then discarded.
 */
const CLIENT_TIMEOUT_MARGIN_MS = 1_000;
/** Pooled connections unused this long are closed. */
const IDLE_TIMEOUT_MS = 30_000;
/** Readiness should answer quickly, whatever the statement timeout. */
const PING_TIMEOUT_MS = 1_000;
/** Schema changes may legitimately outlast a request's statement budget, and wait for another instance's. */
const MIGRATION_TIMEOUT_MS = 60_000;
/** Shown in pg_stat_activity, so operators can tell Tollgate's connections apart. */
const APPLICATION_NAME = 'tollgate';
export const LISTENER_APPLICATION_NAME = 'tollgate-keys-listener';

const UNIQUE_VIOLATION = '23505';

const KEY_COLUMNS = `k.id, k.account_id, k.name, k.prefix, k.last4, k.created_at, k.revoked_at, k.expires_at,
  k.spend_limit, k.spent, k.models, k.rate_limits, k.budget, k.allowed_networks, k.operator_limits, k.session_budget::text AS session_budget`;

/** Returns `prefix` followed by 16 random hex characters (64 bits), like the SQLite store's ids. */
function newId(prefix: 'acc_' | 'key_'): string {
  return prefix + randomBytes(8).toString('hex');
}

const { toAccount, toKeyIdentity, toKeyRecord } = rowMappers(POSTGRES_CODEC);

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The `Store` on a PostgreSQL database. Call `migrate()` before anything else. */
export class PostgresStore implements Store {
  readonly shared = true;
  private readonly pool: Pool;
  private readonly ledger: PostgresLedger;
  /** Card payments (postgres-payments.ts). */
  readonly payments: CardPaymentStore;
  /** Refused requests (postgres-refusals.ts). */
  readonly refusals: RefusalStore;
  /** Relayed response ids (postgres-relayed-responses.ts). */
  readonly relayedResponses: RelayedResponseStore;
  private readonly listener: KeyChangeListener;
  private readonly connection: PoolConfig;
  private closed = false;
  private secretKeyPart: SecretKey | null = null;
  /** The limits this store runs with (the URL is left out: it usually carries a password). */
  readonly limits: Omit<PostgresStoreConfig, 'url'>;

  /**
   * Creates the pool; nothing connects until the first query. `onBackgroundError` hears about failures
   * no caller is waiting for (an idle pooled connection dropped, the listener lost); they are never
   * thrown, since throwing them would crash the process.
   */
  constructor(
    config: PostgresStoreConfig,
    private readonly onBackgroundError: (error: Error) => void = () => undefined,
    /** Holds TOLLGATE_SECRET_KEY, which `migrate()` requires (auth/secret-key.ts). */
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.limits = { connect_timeout_ms: config.connect_timeout_ms, statement_timeout_ms: config.statement_timeout_ms, pool_size: config.pool_size };
    this.connection = {
      connectionString: config.url,
      connectionTimeoutMillis: config.connect_timeout_ms,
      statement_timeout: config.statement_timeout_ms,
      query_timeout: config.statement_timeout_ms + CLIENT_TIMEOUT_MARGIN_MS,
      // A transaction left open (a bug, a stalled process) would otherwise keep its rows locked.
      idle_in_transaction_session_timeout: config.statement_timeout_ms,
      keepAlive: true,
    };
    this.pool = new Pool({ ...this.connection, application_name: APPLICATION_NAME, max: config.pool_size, idleTimeoutMillis: IDLE_TIMEOUT_MS });
    // The pool has already discarded the broken client; the next query gets a fresh one.
    this.pool.on('error', (error) => this.onBackgroundError(error));
    retryTerminatedConnections(this.pool);
    this.ledger = new PostgresLedger(this.pool);
    this.payments = new PostgresPayments(this.pool);
    this.refusals = new PostgresRefusals(this.pool);
    this.relayedResponses = new PostgresRelayedResponses(this.pool);
    this.listener = new KeyChangeListener({ ...this.connection, application_name: LISTENER_APPLICATION_NAME }, onBackgroundError);
  }

  async migrate(): Promise<void> {
    // Before connecting: a missing key is the operator's to fix, not a store to wait for.
    this.secretKeyPart ??= sharedStoreKey(this.env);
    const client = new Client({
      ...this.connection,
      application_name: APPLICATION_NAME,
      statement_timeout: MIGRATION_TIMEOUT_MS,
      query_timeout: MIGRATION_TIMEOUT_MS + CLIENT_TIMEOUT_MARGIN_MS,
      idle_in_transaction_session_timeout: MIGRATION_TIMEOUT_MS,
    });
    client.on('error', (error) => this.onBackgroundError(error));
    await client.connect();
    try {
      await applyPostgresMigrations(client);
    } finally {
      await client.end().catch(() => undefined);
    }
    await consoleQueries.sealPlaintextFactors(this.pool, this.secretKey);
    // Listening before the first request means the auth cache can be used from the start.
    await this.listener.start();
  }

  /** The key TOTP secrets are sealed with: TOLLGATE_SECRET_KEY. */
  private get secretKey(): SecretKey {
    if (this.secretKeyPart === null) throw new Error('the store has no secret key before migrate()');
    return this.secretKeyPart;
  }

  verifySecretKey(): Promise<void> {
    return consoleQueries.requireOpenableFactors(this.pool, this.secretKey);
  }

  async createAccount(input: { name: string; role: AccountRole; email?: string | null; passwordHash?: string | null }): Promise<Account> {
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
      await this.pool.query('INSERT INTO accounts (id, name, email, role, disabled, created_at, password_hash) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
        row.id, row.name, row.email, row.role, row.disabled, row.created_at, input.passwordHash ?? null,
      ]);
    } catch (error) {
      const { code, constraint } = error as { code?: unknown; constraint?: unknown };
      if (code === UNIQUE_VIOLATION) {
        throw constraint === 'accounts_email' ? new AccountExistsError(row.email ?? '', 'email') : new AccountExistsError(input.name);
      }
      throw error;
    }
    this.listener.bump();
    return toAccount(row);
  }

  async findAccountByName(name: string): Promise<Account | null> {
    const { rows } = await this.pool.query<AccountRow<PostgresColumns>>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE lower(name) = lower($1)`, [name]);
    return rows.length === 0 ? null : toAccount(rows[0]);
  }

  async findAccountById(id: string): Promise<Account | null> {
    const { rows } = await this.pool.query<AccountRow<PostgresColumns>>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = $1`, [id]);
    return rows.length === 0 ? null : toAccount(rows[0]);
  }

  async keySpend(keyId: string): Promise<KeySpend | null> {
    const { rows } = await this.pool.query<{ spend_limit: string | null; spent: string }>('SELECT spend_limit, spent FROM api_keys WHERE id = $1', [keyId]);
    if (rows.length === 0) return null;
    return { spendLimit: rows[0].spend_limit === null ? null : BigInt(rows[0].spend_limit), spent: BigInt(rows[0].spent) };
  }

  async countAccounts(): Promise<number> {
    const { rows } = await this.pool.query<{ count: string }>('SELECT count(*) AS count FROM accounts');
    return Number(rows[0].count);
  }

  listAccounts(): Promise<AccountSummary[]> {
    return consoleQueries.listAccounts(this.pool);
  }

  findLogin(login: string): Promise<AccountLogin | null> {
    return consoleQueries.findLogin(this.pool, login);
  }

  /** Not a key-revision change: key authentication never reads the password. */
  setPassword(accountId: string, passwordHash: string): Promise<boolean> {
    return consoleQueries.setPassword(this.pool, accountId, passwordHash);
  }

  async setAccountDisabled(accountId: string, disabled: boolean): Promise<boolean> {
    if (!(await consoleQueries.setAccountDisabled(this.pool, accountId, disabled))) return false;
    this.listener.bump();
    return true;
  }

  async setAccountBudget(accountId: string, budget: Budget | null): Promise<boolean> {
    const { rowCount } = await this.pool.query('UPDATE accounts SET budget = $2 WHERE id = $1', [accountId, budgetText(budget)]);
    if (rowCount === 0) return false;
    this.listener.bump();
    return true;
  }

  async recordAlert(alert: NewAlert): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `INSERT INTO budget_alerts (id, once, account_id, key_id, kind, body, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (once) DO NOTHING`,
      [alert.id, alert.once, alert.accountId, alert.keyId, alert.kind, alert.body, alert.createdAt],
    );
    return rowCount === 1;
  }

  async listAlerts(filter: { accountId?: string; undelivered?: boolean; limit?: number }): Promise<AlertRecord[]> {
    const { rows } = await this.pool.query<{
      id: string; once: string; account_id: string; key_id: string | null; kind: 'budget' | 'balance'; body: string; created_at: Date; delivered_at: Date | null; attempts: number;
    }>(
      `SELECT id, once, account_id, key_id, kind, body, created_at, delivered_at, attempts FROM budget_alerts
        WHERE ($1::text IS NULL OR account_id = $1) AND (NOT $2 OR delivered_at IS NULL)
        ORDER BY created_at DESC, seq DESC LIMIT $3`,
      [filter.accountId ?? null, filter.undelivered === true, filter.limit ?? 100],
    );
    return rows.map((row) => ({
      id: row.id,
      once: row.once,
      accountId: row.account_id,
      keyId: row.key_id,
      kind: row.kind,
      body: row.body,
      createdAt: row.created_at,
      deliveredAt: row.delivered_at,
      attempts: row.attempts,
    }));
  }

  async alertAttempted(id: string, delivered: boolean, at: Date): Promise<void> {
    await this.pool.query('UPDATE budget_alerts SET attempts = attempts + 1, delivered_at = COALESCE(delivered_at, $2) WHERE id = $1', [id, delivered ? at : null]);
  }

  async periodSpend(scope: BudgetScope, id: string, since: Date, until: Date): Promise<bigint> {
    const column = scope === 'account' ? 'account_id' : 'key_id';
    const { rows } = await this.pool.query<{ spent: string }>(
      `SELECT COALESCE(sum(cost), 0)::text AS spent FROM charges WHERE ${column} = $1 AND created_at >= $2 AND created_at < $3`,
      [id, since, until],
    );
    return BigInt(rows[0].spent);
  }

  async sessionSpend(scope: BudgetScope, id: string, sessionId: string): Promise<bigint> {
    const column = scope === 'account' ? 'account_id' : 'key_id';
    const { rows } = await this.pool.query<{ spent: string }>(`SELECT COALESCE(sum(cost), 0)::text AS spent FROM charges WHERE ${column} = $1 AND session_id = $2`, [
      id,
      sessionId,
    ]);
    return BigInt(rows[0].spent);
  }

  async setAccountSessionBudget(accountId: string, amount: bigint | null): Promise<boolean> {
    const { rowCount } = await this.pool.query('UPDATE accounts SET session_budget = $2 WHERE id = $1', [accountId, spendLimitParam(amount)]);
    if (rowCount === 0) return false;
    this.listener.bump();
    return true;
  }

  async createKey(input: NewKey): Promise<ApiKeyRecord> {
    // Checked here for a clear message; the foreign key would reject it too, but only as a constraint name.
    if ((await this.findAccountById(input.accountId)) === null) {
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
    };
    await this.pool.query(
      `INSERT INTO api_keys (id, account_id, name, hash, prefix, last4, created_at, revoked_at, expires_at, spend_limit, models, rate_limits, budget,
                             allowed_networks, operator_limits, session_budget)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
      [
        row.id, row.account_id, row.name, input.hash, row.prefix, row.last4, row.created_at, row.revoked_at, row.expires_at,
        row.spend_limit, row.models, row.rate_limits, row.budget, row.allowed_networks, row.operator_limits, row.session_budget,
      ],
    );
    this.listener.bump();
    return toKeyRecord(row);
  }

  async listKeys(filter?: { accountId?: string }): Promise<ApiKeyRecord[]> {
    const { rows } =
      filter?.accountId === undefined
        ? await this.pool.query<KeyRow<PostgresColumns>>(`SELECT ${KEY_COLUMNS} FROM api_keys k ORDER BY k.created_at, k.seq`)
        : await this.pool.query<KeyRow<PostgresColumns>>(`SELECT ${KEY_COLUMNS} FROM api_keys k WHERE k.account_id = $1 ORDER BY k.created_at, k.seq`, [
            filter.accountId,
          ]);
    return rows.map(toKeyRecord);
  }

  async revokeKey(id: string): Promise<boolean> {
    // COALESCE keeps the first revocation time when a key is revoked twice.
    const { rowCount } = await this.pool.query('UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $1) WHERE id = $2', [new Date(), id]);
    if (rowCount === 0) return false;
    this.listener.bump();
    return true;
  }

  async findKeyByHash(hash: Buffer): Promise<KeyIdentity | null> {
    const { rows } = await this.pool.query<KeyIdentityRow<PostgresColumns>>(
      `SELECT ${KEY_COLUMNS}, k.hash,
              a.name AS account_name, a.email AS account_email, a.role AS account_role,
              a.disabled AS account_disabled, a.created_at AS account_created_at, a.budget AS account_budget,
              a.session_budget::text AS account_session_budget
         FROM api_keys k JOIN accounts a ON a.id = k.account_id
        WHERE k.hash = $1`,
      [hash],
    );
    const row = rows[0];
    if (row === undefined) return null;
    return toKeyIdentity(row);
  }

  keysRevision(): number {
    return this.listener.current();
  }

  async setKeyLimits(id: string, limits: KeyLimits): Promise<boolean> {
    const result = await consoleQueries.setKeyLimits(this.pool, id, limits);
    if (result === 'changed') this.listener.bump();
    return result !== 'unknown';
  }

  createSession(input: NewSession): Promise<SessionRecord> {
    return consoleQueries.createSession(this.pool, input);
  }

  findSession(hash: Buffer, now: Date): Promise<{ session: SessionRecord; account: Account } | null> {
    return consoleQueries.findSession(this.pool, hash, now);
  }

  deleteSession(id: string, accountId: string): Promise<boolean> {
    return consoleQueries.deleteSession(this.pool, id, accountId);
  }

  listSessions(accountId: string, kind: SessionKind): Promise<SessionRecord[]> {
    return consoleQueries.listSessions(this.pool, accountId, kind);
  }

  deleteExpiredSessions(now: Date): Promise<number> {
    return consoleQueries.deleteExpiredSessions(this.pool, now);
  }

  endSessions(accountId: string, except: string | null = null): Promise<number> {
    return consoleQueries.endSessions(this.pool, accountId, except);
  }

  touchSession(id: string, at: Date): Promise<void> {
    return consoleQueries.touchSession(this.pool, id, at);
  }

  getSecondFactor(accountId: string): Promise<SecondFactor | null> {
    return consoleQueries.getSecondFactor(this.pool, this.secretKey, accountId);
  }

  beginSecondFactor(accountId: string, secret: string): Promise<void> {
    return consoleQueries.beginSecondFactor(this.pool, this.secretKey, accountId, secret);
  }

  confirmSecondFactor(accountId: string, step: number, recoveryHashes: readonly Buffer[]): Promise<boolean> {
    return consoleQueries.confirmSecondFactor(this.pool, accountId, step, recoveryHashes);
  }

  removeSecondFactor(accountId: string): Promise<boolean> {
    return consoleQueries.removeSecondFactor(this.pool, accountId);
  }

  useTotpStep(accountId: string, step: number): Promise<boolean> {
    return consoleQueries.useTotpStep(this.pool, accountId, step);
  }

  useRecoveryCode(accountId: string, hash: Buffer, at: Date): Promise<boolean> {
    return consoleQueries.useRecoveryCode(this.pool, accountId, hash, at);
  }

  recoveryCodesLeft(accountId: string): Promise<number> {
    return consoleQueries.recoveryCodesLeft(this.pool, accountId);
  }

  holdFunds(hold: Hold): Promise<HoldResult> {
    return this.ledger.holdFunds(hold);
  }

  recordCharges(charges: readonly ChargeRecord[]): Promise<number> {
    return this.ledger.recordCharges(charges);
  }

  async setAsideCharge(charge: ChargeRecord, error: string): Promise<void> {
    await this.pool.query(
      'INSERT INTO set_aside_charges (request_id, account_id, error, record, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (request_id) DO NOTHING',
      [columnText(charge.requestId), columnText(charge.accountId), columnText(error, 2000), chargeJson(charge), new Date()],
    );
  }

  async listSetAsideCharges(limit = 100): Promise<SetAsideCharge[]> {
    const { rows } = await this.pool.query<{ request_id: string; account_id: string; error: string; record: string; created_at: Date }>(
      'SELECT request_id, account_id, error, record, created_at FROM set_aside_charges ORDER BY created_at DESC, request_id LIMIT $1',
      [limit],
    );
    return rows.map((row) => ({ requestId: row.request_id, accountId: row.account_id, error: row.error, record: row.record, createdAt: row.created_at }));
  }

  releaseHolds(requestIds: readonly string[]): Promise<number> {
    return this.ledger.releaseHolds(requestIds);
  }

  expiredHolds(now: Date, limit: number): Promise<Hold[]> {
    return this.ledger.expiredHolds(now, limit);
  }

  credit(input: NewCredit): Promise<CreditRecord> {
    return this.ledger.credit(input);
  }

  balance(accountId: string): Promise<AccountBalance> {
    return this.ledger.balance(accountId);
  }

  listCharges(filter: ChargeFilter): Promise<ChargeRecord[]> {
    return this.ledger.listCharges(filter);
  }

  chargeTotals(filter: ChargeFilter): Promise<ChargeTotals> {
    return this.ledger.chargeTotals(filter);
  }

  findCharge(requestId: string): Promise<ChargeRecord | null> {
    return usageQueries.findCharge(this.pool, requestId);
  }

  usageSummary(query: UsageSummaryQuery): Promise<UsageSummaryRow[]> {
    return usageQueries.usageSummary(this.pool, query);
  }

  keyActivity(accountId: string, dayStart: Date, monthStart: Date): Promise<KeyActivity[]> {
    return usageQueries.keyActivity(this.pool, accountId, dayStart, monthStart);
  }

  dailyUsage(accountId: string | null, since: Date): Promise<DailyUsage[]> {
    return consoleQueries.dailyUsage(this.pool, accountId, since);
  }

  lastRequests(): Promise<ReadonlyMap<string, Date>> {
    return consoleQueries.lastRequests(this.pool);
  }

  listCredits(accountId: string, limit?: number): Promise<CreditRecord[]> {
    return this.ledger.listCredits(accountId, limit);
  }

  ledgerTotals(): Promise<LedgerTotals[]> {
    return this.ledger.ledgerTotals();
  }

  createRedemptionCodes(input: { hashes: readonly Buffer[]; amount: bigint; createdBy: string | null; expiresAt: Date | null }): Promise<RedemptionCodeRecord[]> {
    return this.ledger.createRedemptionCodes(input);
  }

  redeemCode(hash: Buffer, accountId: string, actor: string | null): Promise<RedeemResult> {
    return this.ledger.redeemCode(hash, accountId, actor);
  }

  listRedemptionCodes(limit?: number): Promise<RedemptionCodeRecord[]> {
    return this.ledger.listRedemptionCodes(limit);
  }

  appendAudit(entry: NewAuditEntry): Promise<AuditRecord> {
    return auditQueries.appendAudit(this.pool, entry);
  }

  listAudit(filter: AuditFilter): Promise<AuditRecord[]> {
    return auditQueries.listAudit(this.pool, filter);
  }

  async ping(): Promise<boolean> {
    if (this.closed) return false;
    try {
      const { rows } = await withTimeout(this.pool.query<{ one: number }>('SELECT 1 AS one'), PING_TIMEOUT_MS);
      return rows[0]?.one === 1;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.listener.close();
    await this.pool.end();
  }
}
