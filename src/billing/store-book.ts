/**
 * The balance book on the store's own tables: holds are rows, and a charge's ledger write is what
 * moves the balance. Exact across instances sharing PostgreSQL, since every hold is a conditional
 * UPDATE the database serialises.
 */
import type { AccountBalance, BudgetCheck, ChargeRecord, CreditRecord, Hold, HoldResult, NewCredit, RedeemResult, Store } from '../store/store';
import type { NewTransfer, TransferResult } from '../store/transfers';
import type { BalanceBook } from './book';
import { chargedInPeriod } from './budget-period';

/** Expired holds released per sweep; the next sweep takes the rest. */
const SWEEP_BATCH = 500;

export class StoreBook implements BalanceBook {
  /** The live figures are the store's rows: nothing to check against the ledger or rebuild. */
  readonly liveCopy = null;
  private unwritten: (counts: (charge: ChargeRecord) => boolean) => bigint = () => 0n;

  constructor(private readonly store: Store) {}

  hold(hold: Hold): Promise<HoldResult> {
    return this.store.holdFunds(hold);
  }

  /** Nothing to do: `recordCharges` removes the hold and takes the cost in one transaction. */
  async settle(_charge: ChargeRecord): Promise<void> {}

  /** The ledger's sum and this instance's charges on their way to it (another instance's are not seen). */
  async budgetSpent(check: BudgetCheck): Promise<bigint> {
    const queued = this.unwritten((charge) => chargedInPeriod(charge, check));
    return (await this.store.periodSpend(check.scope, check.id, check.start, check.end)) + queued;
  }

  countUnwritten(unwritten: (counts: (charge: ChargeRecord) => boolean) => bigint): void {
    this.unwritten = unwritten;
  }

  /** Nothing to count: a charge reaches the balance when `recordCharges` writes it, not before. */
  written(): void {}

  /** Nothing to count: a replayed charge is in the balance once the ledger writer writes it. */
  async adopt(): Promise<void> {}

  credit(input: NewCredit): Promise<CreditRecord> {
    return this.store.credit(input);
  }

  applyStored<T>(_accountId: string, write: () => Promise<T>): Promise<T> {
    return write();
  }

  /** The store's rows are the live figures: its transaction locks the source and judges it. */
  transfer(input: NewTransfer): Promise<TransferResult> {
    return this.store.transfers.transfer(input, 0n);
  }

  redeem(codeHash: Buffer, accountId: string, actor: string | null): Promise<RedeemResult> {
    return this.store.redeemCode(codeHash, accountId, actor);
  }

  balance(accountId: string): Promise<AccountBalance> {
    return this.store.balance(accountId);
  }

  async releaseExpired(now: Date): Promise<number> {
    const expired = await this.store.expiredHolds(now, SWEEP_BATCH);
    return expired.length === 0 ? 0 : this.store.releaseHolds(expired.map((hold) => hold.requestId));
  }

  ping(): Promise<boolean> {
    return this.store.ping();
  }

  async close(): Promise<void> {}
}
