/**
 * What a balance book that keeps its own copy of the live figures (Redis, in front of the ledger)
 * does beyond the core `BalanceBook`: that copy can drift from the ledger, so it is checked and
 * rebuilt; several instances write into it, so each has an id and says where its outbox is; and a
 * ledger write must move the copy's "not written yet" figures in step with the store. Reached through
 * `BalanceBook.liveCopy`, null for the books whose live figures are the store's or this process's.
 */
import type { BudgetScope, ChargeRecord, LedgerTotals } from '../store/store';

export interface LiveCopy {
  /** The id under which this instance's unwritten charges are counted in the copy. */
  readonly instance: string;
  /** Accounts whose live balance differs from the ledger's less charges not yet written. */
  drift(totals: readonly LedgerTotals[]): Promise<AccountDrift[]>;
  /** Budgets whose live period spend differs from the ledger's. */
  budgetDrift(): Promise<BudgetDrift[]>;
  /** Rebuilds these accounts' live balances from the ledger. */
  rebuild(accountIds: readonly string[]): Promise<void>;
  /** Drops these live period spends; each is seeded again from the ledger when next used. */
  rebuildBudgets(drifts: readonly BudgetDrift[]): Promise<void>;
  /**
   * Says where this instance's outbox is (null: it is drained and closing), so a check made while the
   * instance is stopped knows its unwritten charges are kept, not lost.
   */
  registerOutbox(where: string | null): Promise<void>;
  /** Instances that stopped with charges in their outboxes: their `unwritten` is on its way, not drift. */
  stoppedOutboxes(): Promise<StoppedOutbox[]>;
  /**
   * Runs one ledger write (`write` resolves to how many charges were new), marking its charges as
   * being written and dropping them once it committed, so a live balance rebuilt meanwhile counts
   * each once. `BalanceBook.written` is not called for these.
   */
  writeLedger(charges: readonly ChargeRecord[], write: () => Promise<number>): Promise<number>;
}

export interface StoppedOutbox {
  readonly instance: string;
  /** Host and folder of its outbox. */
  readonly where: string;
  readonly accounts: number;
  /** The `unwritten` it left, in nano-units. */
  readonly amount: bigint;
}

/** An account whose live balance is not what the ledger says (plus charges not yet written). */
export interface AccountDrift {
  readonly accountId: string;
  readonly accountName: string;
  /** The live balance plus the charges it has taken that the ledger has not recorded yet. */
  readonly live: bigint;
  readonly ledger: bigint;
}

/** A budget whose live period spend is not the ledger's sum for the period (less charges not yet written). */
export interface BudgetDrift {
  readonly scope: BudgetScope;
  readonly id: string;
  readonly start: Date;
  readonly end: Date;
  readonly live: bigint;
  readonly ledger: bigint;
}
