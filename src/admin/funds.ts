/**
 * Balances, credits and redemptions as the console sees them. They must go through the billing
 * plugin's balance book, not the store alone: the book is what holds funds for requests (in process,
 * or in Redis across instances), so a credit the console makes must reach it, and the balance the
 * console shows must be the one requests are admitted against. With billing off there is no book and
 * the store's own numbers are the truth.
 */
import type { BalanceBook } from '../billing/book';
import { hashRedemptionCode } from '../billing/redemption';
import type { RuntimeRef } from '../kernel/runtime';
import type { AccountBalance, CreditRecord, LedgerStore, NewCredit } from '../store/ledger-store';
import type { PaymentsStore, RedeemResult } from '../store/payments-store';
import type { NewTransfer, TransferResult, TransferStore } from '../store/transfers';

export interface Funds {
  balance(accountId: string): Promise<AccountBalance>;
  credit(input: NewCredit): Promise<CreditRecord>;
  redeem(code: string, accountId: string, actor: string | null): Promise<RedeemResult>;
  /** Moves credit between two accounts through the book (`BalanceBook.transfer`), or the store alone with billing off. */
  transfer(input: NewTransfer): Promise<TransferResult>;
  /** A balance change the store writes itself (a card payment's credit or debit), seen by the live book (`BalanceBook.applyStored`). */
  applyStored<T>(accountId: string, write: () => Promise<T>, moved: (result: T) => bigint): Promise<T>;
}

function bookOf(runtime: RuntimeRef): BalanceBook | null {
  return runtime.current.chain.service('billing') ?? null;
}

/** Funds through whichever book serves requests at the moment of each call (a reload may swap it). */
export function liveFunds(runtime: RuntimeRef, store: LedgerStore & PaymentsStore & { readonly transfers: TransferStore }): Funds {
  return {
    balance: (accountId) => (bookOf(runtime) ?? store).balance(accountId),
    credit: (input) => (bookOf(runtime) ?? store).credit(input),
    redeem(code, accountId, actor) {
      const hash = hashRedemptionCode(code);
      const book = bookOf(runtime);
      return book === null ? store.redeemCode(hash, accountId, actor) : book.redeem(hash, accountId, actor);
    },
    transfer(input) {
      const book = bookOf(runtime);
      return book === null ? store.transfers.transfer(input, 0n) : book.transfer(input);
    },
    applyStored(accountId, write, moved) {
      const book = bookOf(runtime);
      return book === null ? write() : book.applyStored(accountId, write, moved);
    },
  };
}
