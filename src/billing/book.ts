/**
 * The balance book: where funds are held for requests under way and where live balances are read.
 * Two back ends share this contract: `StoreBook` (the store's own tables, exact across instances
 * through conditional updates in SQLite or PostgreSQL) and `RedisBook` (balances and holds in Redis
 * behind atomic Lua scripts, the ledger still in the store). The ledger itself (charges, credits) is
 * always the store's; the book only keeps the live numbers in front of it.
 */
import type { AccountBalance, BudgetCheck, BudgetScope, ChargeRecord, CreditRecord, Hold, HoldResult, LedgerTotals, NewCredit, RedeemResult } from '../store/store';

export interface BalanceBook {
  /** Holds `hold.amount` atomically, or says why not and what was available. */
  hold(hold: Hold): Promise<HoldResult>;
  /**
   * Applies a finished request's charge to the live balances and frees its hold. The charge is
   * recorded in the ledger separately (batched, `LedgerWriter`); a book whose live numbers are the
   * store's own does nothing here, since recording the charge is what updates them. `budgets` are the
   * ones the hold was checked against: the charge counts in their period at its own time.
   */
  settle(charge: ChargeRecord, budgets?: readonly BudgetCheck[]): Promise<void>;
  /** What a budget's key or account was charged in its period, written to the ledger or not. */
  budgetSpent(check: BudgetCheck): Promise<bigint>;
  /** Adds funds: written to the ledger at once, and to the live balance. */
  credit(input: NewCredit): Promise<CreditRecord>;
  /**
   * A credit the store recorded directly (redemption) reaches the live balance. `Store.redeemCode`
   * writes the credit and the stored balance in one transaction, so a book whose live numbers are
   * the store's own leaves this out; a book that keeps its own copy (Redis) must add the amount.
   */
  applyCredit?(credit: CreditRecord): Promise<void>;
  /**
   * Redeems a code (by its SHA-256) for an account: the store claims the code and records the credit
   * in one transaction, at most once however many race; the live balance sees the credit too.
   */
  redeem(codeHash: Buffer, accountId: string, actor: string | null): Promise<RedeemResult>;
  /**
   * A balance change the store writes in a transaction of its own (a card payment's credit, a refund's
   * debit): `write` makes it, at most once however many race, and `moved` says by how much it moved
   * the balance (0n when it had been made already); the live balance moves by as much.
   */
  applyStored<T>(accountId: string, write: () => Promise<T>, moved: (result: T) => bigint): Promise<T>;
  /** The live balance and what is held. */
  balance(accountId: string): Promise<AccountBalance>;
  /** Releases holds older than their expiry (their instance died); returns how many. */
  releaseExpired(now: Date): Promise<number>;
  /**
   * Told where to sum the charges this instance settled but has not written to the ledger yet (those
   * `counts` accepts): a book that rebuilds live figures from the ledger must allow for them.
   */
  countUnwritten?(unwritten: (counts: (charge: ChargeRecord) => boolean) => bigint): void;
  /** Accounts whose live balance differs from the ledger's less charges not yet written (a book with its own copy). */
  drift?(totals: readonly LedgerTotals[]): Promise<AccountDrift[]>;
  /** Budgets whose live period spend differs from the ledger's (a book with its own copy). */
  budgetDrift?(): Promise<BudgetDrift[]>;
  /** Drops these live period spends; each is seeded again from the ledger when next used. */
  rebuildBudgets?(drifts: readonly BudgetDrift[]): Promise<void>;
  /** Rebuilds these accounts' live balances from the ledger. */
  rebuild?(accountIds: readonly string[]): Promise<void>;
  /**
   * Charges an earlier process (or a writer since closed) settled here and the ledger may not have,
   * found in the outbox and queued again: a book that counts queued charges counts them (under this
   * book's instance, moved from the one named with each).
   */
  adopt?(charges: readonly AdoptedCharge[]): Promise<void>;
  /** The id under which a book with its own copy (Redis) counts this instance's unwritten charges. */
  readonly instance?: string;
  /**
   * Says where this instance's outbox is (null: it is drained and closing), so a check made while the
   * instance is stopped knows its unwritten charges are kept, not lost.
   */
  registerOutbox?(where: string | null): Promise<void>;
  /** Instances that stopped with charges in their outboxes: their `unwritten` is on its way, not drift. */
  stoppedOutboxes?(): Promise<StoppedOutbox[]>;
  /** Told when charges left the ledger writer's queue (written, or set aside) without `writeLedger`. */
  written?(charges: readonly ChargeRecord[]): void;
  /**
   * Runs one ledger write (`write` resolves to how many charges were new): a book that counts the
   * charges not yet written (Redis) marks them as being written and drops them when it committed, so a
   * live balance rebuilt meanwhile counts each once. `written` is not called for these.
   */
  writeLedger?(charges: readonly ChargeRecord[], write: () => Promise<number>): Promise<number>;
  /** Whether the book's back end answers, for readiness. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/** A charge replayed from the outbox, with the book instance that took it from the live balance (null: none). */
export interface AdoptedCharge {
  readonly charge: ChargeRecord;
  readonly instance: string | null;
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

/** Thrown when the book's back end cannot be reached in time: billing fails closed with a 503. */
export class BookUnavailableError extends Error {
  override readonly name = 'BookUnavailableError';
}
