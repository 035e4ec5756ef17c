/**
 * The persistence boundary: one interface per domain (access, ledger, usage, audit, payments: each in
 * its `<domain>-store.ts`), composed here with the store's lifecycle. The embedded SQLite store and
 * PostgreSQL implement it, so the rest of Tollgate never knows which one it talks to; code that needs
 * one domain takes that domain's interface.
 */
import type { AccessStore } from './access-store';
import type { LedgerStore } from './ledger-store';
import type { UsageStore } from './usage-store';
import type { AuditStore } from './audit-store';
import type { PaymentsStore } from './payments-store';
import type { OrgStore } from './orgs';
import type { StatementStore } from './statements';
import type { TransferStore } from './transfers';

// Every record type, where the code written before the split finds it.
export type { AccountRole, Account, BudgetPeriod, Budget, ApiKeyRecord, OperatorLimits, KeyRateLimits, KeyIdentity, NewKey, KeyLimits, AccountSummary, AccountLogin, SessionKind, NewSession, SessionRecord, SecondFactor, RevisionFreshness } from './access-store';
export { AccountExistsError } from './access-store';
export type { BudgetScope, SessionScope, BudgetCheck, SessionBudgetCheck, Hold, HoldResult, UsageSourceRecord, ChargePrices, ServiceLevel, ChargeRecord, ChargeAttempt, ChargeOrigin, SetAsideCharge, NewCredit, CreditRecord, AccountBalance, LedgerTotals, KeySpend } from './ledger-store';
export type { DailyUsage, ChargeFilter, ChargeCursor, ChargeTotals, UsageGroup, UsageSummaryQuery, UsageSummaryRow, KeyActivity } from './usage-store';
export { PLAYGROUND_SESSION_GROUP, USAGE_GROUPS } from './usage-store';
export type { NewAlert, AlertRecord } from './audit-store';
export type { RedemptionCodeRecord, RedeemResult } from './payments-store';
export type { CreditKind } from './payments';

export interface Store extends AccessStore, LedgerStore, UsageStore, AuditStore, PaymentsStore {
  /**
   * Whether several gateway instances may share this store (PostgreSQL). An embedded store serves one
   * instance, so its live holds can be kept in that process's memory.
   */
  readonly shared: boolean;
  /**
   * False when what it records dies with the process (an in-memory SQLite database): an outbox in
   * front of it would replay charges into a ledger that no longer exists. Absent: it survives.
   */
  readonly durable?: boolean;
  /** Organisations, their members and invitations (orgs.ts). */
  readonly orgs: OrgStore;

  /** Monthly statements, issued from the ledger and never changed (statements.ts). */
  readonly statements: StatementStore;

  /** Credit moved between two accounts: a debit and a credit in one transaction (transfers.ts). */
  readonly transfers: TransferStore;

  /**
   * Creates or upgrades the schema, and seals TOTP secrets an older version stored in plaintext; safe
   * to run at every start. Throws SecretKeyError when the secret key is malformed, or missing where
   * it must be given (auth/secret-key.ts).
   */
  migrate(): Promise<void>;

  /** Whether the store answers; for readiness. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
