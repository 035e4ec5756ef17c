/**
 * The balance book: where funds are held for requests under way and where live balances are read.
 * Three back ends share this contract: `LocalBook` (this process's memory in front of an embedded
 * store one process serves), `StoreBook` (the store's own tables, exact across instances
 * through conditional updates in SQLite or PostgreSQL) and `RedisBook` (balances and holds in Redis
 * behind atomic Lua scripts, the ledger still in the store). The ledger itself (charges, credits) is
 * always the store's; the book only keeps the live numbers in front of it. What only a book with a
 * copy of its own (Redis) does is in `LiveCopy` (live-copy.ts), reached through `liveCopy`.
 */
import type { AccountBalance, BudgetCheck, ChargeRecord, CreditRecord, Hold, HoldResult, NewCredit, RedeemResult } from '../store/store';
import type { NewTransfer, TransferResult } from '../store/transfers';
import type { LiveCopy } from './live-copy';

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
  /**
   * Moves credit from one account to another: the ledger's two entries in one store transaction, and
   * both live balances, refused when the source's available funds (balance less holds and charges
   * not yet written) do not cover it, judged atomically with every hold on the source (the transfer
   * rule, src/money/transfer.ts). So concurrent requests and transfers never overspend.
   */
  transfer(input: NewTransfer): Promise<TransferResult>;
  /** The live balance and what is held. */
  balance(accountId: string): Promise<AccountBalance>;
  /** Releases holds older than their expiry (their instance died); returns how many. */
  releaseExpired(now: Date): Promise<number>;
  /**
   * The ledger writer's queue, which every book lives in front of: charges settled here and not yet
   * in the store. Each book is told all three; one whose figures need none of it does nothing there.
   *
   * `countUnwritten` says where to sum the queued charges `counts` accepts: a book that reads a
   * figure from the ledger (a period's spend, a seed) must add them.
   */
  countUnwritten(unwritten: (counts: (charge: ChargeRecord) => boolean) => bigint): void;
  /**
   * Charges an earlier process (or a writer since closed) settled here and the ledger may not have,
   * found in the outbox and queued again: a book that counts queued charges counts them (under this
   * book's instance, moved from the one named with each).
   */
  adopt(charges: readonly AdoptedCharge[]): Promise<void>;
  /**
   * Told when charges left the ledger writer's queue (written, or set aside); with a live copy, a
   * written batch goes through `LiveCopy.writeLedger` instead, and only set-aside charges come here.
   */
  written(charges: readonly ChargeRecord[]): void;
  /**
   * The copy of the live figures the book keeps apart from the ledger (Redis), for the drift checks,
   * heal and the outbox's bookkeeping; null when the live figures are the store's or this process's.
   */
  readonly liveCopy: LiveCopy | null;
  /** Whether the book's back end answers, for readiness. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/** A charge replayed from the outbox, with the book instance that took it from the live balance (null: none). */
export interface AdoptedCharge {
  readonly charge: ChargeRecord;
  readonly instance: string | null;
}

/** Thrown when the book's back end cannot be reached in time: billing fails closed with a 503. */
export class BookUnavailableError extends Error {
  override readonly name = 'BookUnavailableError';
}
