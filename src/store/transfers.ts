/**
 * Transfers as the store keeps them: one transaction writes a `transfer` debit on the source account
 * and a `transfer` credit on the destination, both carrying the transfer's id, and moves both
 * balances. There is no table of transfers beside them: the two ledger entries are the transfer, so
 * `tollgate ledger verify` (credits − charges − debits = balance) covers it as it covers any entry.
 * Whether the source can afford it is the rule of src/money/transfer.ts, asked inside the transaction.
 */
import { randomBytes } from 'node:crypto';
import type { TransferAdmission } from '../money/transfer';

export interface NewTransfer {
  readonly fromAccountId: string;
  readonly toAccountId: string;
  /** Nano-units, > 0. */
  readonly amount: bigint;
  /** The account name of who moved it, or `cli:<user>`. */
  readonly actor: string;
  readonly note: string | null;
}

export interface TransferRecord extends NewTransfer {
  /** `tr_` and 16 hex digits: the id both ledger entries carry. */
  readonly id: string;
  /** The source's debit and the destination's credit. */
  readonly debitId: string;
  readonly creditId: string;
  readonly createdAt: Date;
}

export type TransferResult = { readonly ok: true; readonly transfer: TransferRecord } | (Extract<TransferAdmission, { ok: false }> & { readonly transfer?: never });

export interface TransferStore {
  /**
   * Moves `input.amount` from one account to the other in one transaction, when the rule admits it
   * on the source's balance less its held column less `alsoHeld` (what a book in front of the store
   * holds or has not written yet, that the store's rows do not show). Throws when an account is unknown.
   */
  transfer(input: NewTransfer, alsoHeld: bigint): Promise<TransferResult>;
  /** The transfers into or out of the account, newest first. */
  listTransfers(accountId: string, limit?: number): Promise<TransferRecord[]>;
}

/** Thrown by a store when an account of a transfer does not exist. */
export class UnknownTransferAccountError extends Error {}

export function newTransferIds(): { id: string; debitId: string; creditId: string } {
  const hex = () => randomBytes(8).toString('hex');
  return { id: `tr_${hex()}`, debitId: `db_${hex()}`, creditId: `cr_${hex()}` };
}

/** A transfer as both stores read it: the debit row joined to its credit. */
export interface TransferRow<D> {
  transfer_id: string;
  debit_id: string;
  credit_id: string;
  from_account_id: string;
  to_account_id: string;
  amount: string;
  actor: string | null;
  note: string | null;
  created_at: D;
}

export function toTransferRecord<D>(row: TransferRow<D>, date: (value: D) => Date): TransferRecord {
  return {
    id: row.transfer_id,
    debitId: row.debit_id,
    creditId: row.credit_id,
    fromAccountId: row.from_account_id,
    toAccountId: row.to_account_id,
    amount: BigInt(row.amount),
    actor: row.actor ?? '',
    note: row.note,
    createdAt: date(row.created_at),
  };
}
