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
import type { StatementStore } from './statements';
import { SqliteStatements } from './sqlite-statements';
import type { RelayedResponseStore } from './relayed-responses';
import { SqliteRelayedResponses } from './sqlite-relayed-responses';
import { BUSY_TIMEOUT_MS, retryWhileBusy } from './sqlite-busy';
import { listSetAsideCharges, setAsideCharge } from './sqlite-set-aside';
import { SqliteKeys } from './sqlite-keys';
import { SqliteAlerts } from './sqlite-alerts';
import type { OrgStore } from './orgs';
import { SqliteOrgs } from './sqlite-orgs';
import type { TransferStore } from './transfers';
import { SqliteTransfers } from './sqlite-transfers';
import { existsSync } from 'node:fs';
import { makePrivateDir, tightenFiles } from '../private-files';
import { embeddedStoreKey, type SecretKey } from '../auth/secret-key';
import path from 'node:path';
import type { AuditFilter, AuditRecord, NewAuditEntry } from './audit';
import { SqliteAudit } from './sqlite-audit';
import { openSqlite, type SqliteDatabase, type SqliteStatement } from './sqlite-driver';
import { SqliteConsole, SqliteSecondFactors } from './sqlite-console';
import { SqliteLedger } from './sqlite-ledger';
import type { ChargeBatchWriter } from './sqlite-background-writes';
import type {
  Account,
  AccountBalance,
  AccountLogin,
  AccountRole,
  AccountSummary,
  ApiKeyRecord,
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
  RevisionFreshness,
  SessionKind,
  SecondFactor,
  SessionRecord,
  SetAsideCharge,
  Store,
  UsageSummaryQuery,
  UsageSummaryRow,
  AlertRecord,
  Budget,
  BudgetScope,
  SessionScope,
  NewAlert,
  OperatorLimits,
} from './store';
import { applySqliteMigrations } from './migrations/sqlite';

/** The file name SQLite understands as "no file, keep it in memory" (tests). */
export const SQLITE_MEMORY = ':memory:';

/** Every call that may meet another process's lock; `migrate`, `ping` and `close` answer at once. */
const RETRIED_METHODS = [
  'migrate', 'findAccountById', 'keySpend', 'setKeyLimits', 'setAccountBudget', 'setAccountSessionBudget', 'setAccountOperatorLimits', 'accountOperatorLimits', 'periodSpend', 'sessionSpend', 'recordAlert', 'listAlerts', 'alertAttempted', 'listAccounts', 'findLogin', 'setPassword', 'setAccountDisabled',
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

/** Every organisations call may meet another process's lock too (the CLI's `tollgate org`). */
const ORG_METHODS = [
  'createOrganisation', 'isOrganisation', 'listOrganisations', 'organisationsOf', 'listMembers', 'findMember', 'setMemberRole', 'removeMember', 'setMemberLimits',
  'createInvitation', 'listInvitations', 'findInvitation', 'revokeInvitation', 'acceptInvitation',
] as const satisfies readonly (keyof OrgStore)[];

/** The `Store` on one SQLite file (or `:memory:`). Call `migrate()` before anything else. */

export class SqliteStore implements Store {
  readonly shared = false;
  readonly durable: boolean;
  readonly payments: CardPaymentStore;
  readonly refusals: RefusalStore;
  readonly relayedResponses: RelayedResponseStore;
  readonly orgs: OrgStore;
  readonly statements: StatementStore;
  readonly transfers: TransferStore;
  private readonly db: SqliteDatabase;
  private readonly dataVersion: SqliteStatement<[], number>;
  private readonly selectOne: SqliteStatement<[], number>;
  private keysRevisionRow: SqliteStatement<[], number> | null = null;
  private keysPart: SqliteKeys | null = null;
  private alertsPart: SqliteAlerts | null = null;
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
  /** Where ledger batches are written when not on this connection. */
  private chargeWriter: ChargeBatchWriter | null = null;
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
    this.statements = new SqliteStatements(this.db);
    retryWhileBusy<StatementStore>(this.statements, ['issue', 'list', 'find', 'firstEntry']);
    this.relayedResponses = new SqliteRelayedResponses(this.db);
    retryWhileBusy<RelayedResponseStore>(this.relayedResponses, ['record', 'relayedTo']);
    this.orgs = new SqliteOrgs(this.db, () => (this.localRevision += 1));
    retryWhileBusy<OrgStore>(this.orgs, ORG_METHODS);
    this.transfers = new SqliteTransfers(this.db, () => (this.localFundsRevision += 1));
    retryWhileBusy<TransferStore>(this.transfers, ['transfer', 'listTransfers']);
  }

  // The domains' halves, each made on first use: their statements need the tables `migrate()` creates.

  private get keys(): SqliteKeys {
    this.keysPart ??= new SqliteKeys(this.db, () => (this.localRevision += 1));
    return this.keysPart;
  }

  private get alerts(): SqliteAlerts {
    this.alertsPart ??= new SqliteAlerts(this.db);
    return this.alertsPart;
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
    return this.keys.findAccountById(id);
  }

  async keySpend(keyId: string): Promise<KeySpend | null> {
    return this.ledger.keySpend(keyId);
  }

  async setKeyLimits(id: string, limits: KeyLimits): Promise<boolean> {
    return this.keys.setKeyLimits(id, limits);
  }

  async setAccountBudget(accountId: string, budget: Budget | null): Promise<boolean> {
    return this.keys.setAccountBudget(accountId, budget);
  }

  async setAccountSessionBudget(accountId: string, amount: bigint | null): Promise<boolean> {
    return this.keys.setAccountSessionBudget(accountId, amount);
  }

  async setAccountOperatorLimits(accountId: string, limits: OperatorLimits | null): Promise<boolean> {
    return this.keys.setAccountOperatorLimits(accountId, limits);
  }

  async accountOperatorLimits(accountId: string): Promise<OperatorLimits | null> {
    return this.keys.accountOperatorLimits(accountId);
  }

  async recordAlert(alert: NewAlert): Promise<boolean> {
    return this.alerts.record(alert);
  }

  async listAlerts(filter: { accountId?: string; undelivered?: boolean; limit?: number }): Promise<AlertRecord[]> {
    return this.alerts.list(filter);
  }

  async alertAttempted(id: string, delivered: boolean, at: Date): Promise<void> {
    this.alerts.attempted(id, delivered, at);
  }

  async periodSpend(scope: BudgetScope, id: string, since: Date, until: Date): Promise<bigint> {
    return this.ledger.periodSpend(scope, id, since, until);
  }

  async sessionSpend(scope: SessionScope, id: string, sessionId: string): Promise<bigint> {
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
    return this.chargeWriter !== null ? this.chargeWriter(charges) : this.ledger.recordCharges(charges);
  }

  /** Writes ledger batches with `writer` (a thread's connection, sqlite-background-writes.ts); null: on this connection. */
  writeChargesWith(writer: ChargeBatchWriter | null): void {
    this.chargeWriter = writer;
  }

  async setAsideCharge(charge: ChargeRecord, error: string): Promise<void> {
    setAsideCharge(this.db, charge, error);
  }

  async listSetAsideCharges(limit = 100): Promise<SetAsideCharge[]> {
    return listSetAsideCharges(this.db, limit);
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
    return this.keys.createAccount(input);
  }

  async findAccountByName(name: string): Promise<Account | null> {
    return this.keys.findAccountByName(name);
  }

  async countAccounts(): Promise<number> {
    return this.keys.countAccounts();
  }

  async createKey(input: NewKey): Promise<ApiKeyRecord> {
    return this.keys.createKey(input);
  }

  async listKeys(filter?: { accountId?: string }): Promise<ApiKeyRecord[]> {
    return this.keys.listKeys(filter);
  }

  async revokeKey(id: string): Promise<boolean> {
    return this.keys.revokeKey(id);
  }

  async findKeyByHash(hash: Buffer): Promise<KeyIdentity | null> {
    return this.keys.findKeyByHash(hash);
  }

  keysRevision(asOf: RevisionFreshness = 'now'): number {
    // Another process committed: the revision row says whether it touched keys or accounts (most
    // commits are other workers' holds and charges, which must not empty the key cache).
    const dataVersion = this.readDataVersion(asOf);
    if (dataVersion !== this.seenDataVersion) {
      this.seenDataVersion = dataVersion;
      this.keysRevisionRow ??= this.db.prepare<[], number>('SELECT revision FROM keys_revision WHERE id = 1').pluck();
      this.sharedRevision = this.keysRevisionRow.get() ?? 0;
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

  /**
   * Whether this connection's commits checkpoint the WAL (SQLite's default, at 1,000 pages); off while
   * a thread does it for them (sqlite-background-writes.ts).
   */
  autoCheckpoint(on: boolean): void {
    this.db.exec(`PRAGMA wal_autocheckpoint = ${on ? 1000 : 0}`);
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
