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
import type { OrgStore } from './orgs';
import { PostgresOrgs } from './postgres-orgs';
import type { StatementStore } from './statements';
import { PostgresStatements } from './postgres-statements';
import type { TransferStore } from './transfers';
import { PostgresTransfers } from './postgres-transfers';
import type { RelayedResponseStore } from './relayed-responses';
import { PostgresRelayedResponses } from './postgres-relayed-responses';
import { Client, Pool, type PoolConfig } from 'pg';
import type { StoreConfig } from '../config/types';
import type { AuditFilter, AuditRecord, NewAuditEntry } from './audit';
import * as auditQueries from './postgres-audit';
import * as consoleQueries from './postgres-console';
import * as keyQueries from './postgres-keys';
import * as alertQueries from './postgres-alerts';
import * as usageQueries from './postgres-usage';
import { PostgresLedger } from './postgres-ledger';
import { KeyChangeListener } from './postgres-revision';
import { applyPostgresMigrations } from './migrations/postgres';
import { retryTerminatedConnections } from './postgres-tx';
import { sharedStoreKey, type SecretKey } from '../auth/secret-key';
import { listSetAsideCharges, setAsideCharge } from './postgres-set-aside';
import type {
  Account,
  AccountBalance,
  AccountLogin,
  AccountRole,
  AccountSummary,
  ApiKeyRecord,
  AlertRecord,
  Budget,
  BudgetScope,
  SessionScope,
  NewAlert,
  ChargeFilter,
  ChargeTotals,
  ChargeRecord,
  CreditRecord,
  DailyUsage,
  Hold,
  HoldResult,
  KeyActivity,
  KeyLimits,
  KeySpend,
  KeyIdentity,
  LedgerTotals,
  NewCredit,
  NewKey,
  NewSession,
  RedeemResult,
  RedemptionCodeRecord,
  SessionKind,
  SecondFactor,
  SessionRecord,
  SetAsideCharge,
  Store,
  UsageSummaryQuery,
  UsageSummaryRow,
  OperatorLimits,
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
  /** Organisations (postgres-orgs.ts). */
  readonly orgs: OrgStore;
  /** Monthly statements (postgres-statements.ts). */
  readonly statements: StatementStore;
  /** Transfers between accounts (postgres-transfers.ts). */
  readonly transfers: TransferStore;
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
    this.statements = new PostgresStatements(this.pool);
    this.transfers = new PostgresTransfers(this.pool);
    this.listener = new KeyChangeListener({ ...this.connection, application_name: LISTENER_APPLICATION_NAME }, onBackgroundError);
    this.orgs = new PostgresOrgs(this.pool, () => this.listener.bump());
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
    const account = await keyQueries.createAccount(this.pool, input);
    this.listener.bump();
    return account;
  }

  findAccountByName(name: string): Promise<Account | null> {
    return keyQueries.findAccountByName(this.pool, name);
  }

  findAccountById(id: string): Promise<Account | null> {
    return keyQueries.findAccountById(this.pool, id);
  }

  keySpend(keyId: string): Promise<KeySpend | null> {
    return this.ledger.keySpend(keyId);
  }

  countAccounts(): Promise<number> {
    return keyQueries.countAccounts(this.pool);
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
    if (!(await keyQueries.setAccountBudget(this.pool, accountId, budget))) return false;
    this.listener.bump();
    return true;
  }

  recordAlert(alert: NewAlert): Promise<boolean> {
    return alertQueries.recordAlert(this.pool, alert);
  }

  listAlerts(filter: { accountId?: string; undelivered?: boolean; limit?: number }): Promise<AlertRecord[]> {
    return alertQueries.listAlerts(this.pool, filter);
  }

  alertAttempted(id: string, delivered: boolean, at: Date): Promise<void> {
    return alertQueries.alertAttempted(this.pool, id, delivered, at);
  }

  periodSpend(scope: BudgetScope, id: string, since: Date, until: Date): Promise<bigint> {
    return this.ledger.periodSpend(scope, id, since, until);
  }

  sessionSpend(scope: SessionScope, id: string, sessionId: string): Promise<bigint> {
    return this.ledger.sessionSpend(scope, id, sessionId);
  }

  async setAccountOperatorLimits(accountId: string, limits: OperatorLimits | null): Promise<boolean> {
    if (!(await keyQueries.setAccountOperatorLimits(this.pool, accountId, limits))) return false;
    this.listener.bump();
    return true;
  }

  async accountOperatorLimits(accountId: string): Promise<OperatorLimits | null> {
    return keyQueries.accountOperatorLimits(this.pool, accountId);
  }

  async setAccountSessionBudget(accountId: string, amount: bigint | null): Promise<boolean> {
    if (!(await keyQueries.setAccountSessionBudget(this.pool, accountId, amount))) return false;
    this.listener.bump();
    return true;
  }

  async createKey(input: NewKey): Promise<ApiKeyRecord> {
    const key = await keyQueries.createKey(this.pool, input);
    this.listener.bump();
    return key;
  }

  listKeys(filter?: { accountId?: string }): Promise<ApiKeyRecord[]> {
    return keyQueries.listKeys(this.pool, filter);
  }

  async revokeKey(id: string): Promise<boolean> {
    if (!(await keyQueries.revokeKey(this.pool, id))) return false;
    this.listener.bump();
    return true;
  }

  findKeyByHash(hash: Buffer): Promise<KeyIdentity | null> {
    return keyQueries.findKeyByHash(this.pool, hash);
  }

  keysRevision(): number {
    return this.listener.current();
  }

  async setKeyLimits(id: string, limits: KeyLimits): Promise<boolean> {
    const result = await keyQueries.setKeyLimits(this.pool, id, limits);
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

  setAsideCharge(charge: ChargeRecord, error: string): Promise<void> {
    return setAsideCharge(this.pool, charge, error);
  }

  listSetAsideCharges(limit = 100): Promise<SetAsideCharge[]> {
    return listSetAsideCharges(this.pool, limit);
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
    return usageQueries.dailyUsage(this.pool, accountId, since);
  }

  lastRequests(): Promise<ReadonlyMap<string, Date>> {
    return usageQueries.lastRequests(this.pool);
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
