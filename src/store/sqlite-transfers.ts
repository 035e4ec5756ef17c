/**
 * Transfers on SQLite (see transfers.ts): the source's figures are read, judged by the transfer rule
 * and both entries written in one IMMEDIATE transaction on the single writer, so no hold or charge
 * of this store interleaves with it.
 */
import { admitTransfer } from '../money/transfer';
import type { SqliteDatabase } from './sqlite-driver';
import { newTransferIds, toTransferRecord, UnknownTransferAccountError, type NewTransfer, type TransferRecord, type TransferResult, type TransferRow, type TransferStore } from './transfers';

const LIST = `
  SELECT d.transfer_id, d.id AS debit_id, c.id AS credit_id, d.account_id AS from_account_id, c.account_id AS to_account_id,
         CAST(d.amount AS TEXT) AS amount, d.actor, d.note, d.created_at
    FROM debits d JOIN credits c ON c.transfer_id = d.transfer_id
   WHERE d.kind = 'transfer' AND (d.account_id = @account OR c.account_id = @account)
   ORDER BY d.created_at DESC, d.rowid DESC LIMIT @limit`;

export class SqliteTransfers implements TransferStore {
  /** `fundsMoved`: the store's own commits do not move `data_version`, so a book's kept balances are told. */
  constructor(
    private readonly db: SqliteDatabase,
    private readonly fundsMoved: () => void,
  ) {}

  async transfer(input: NewTransfer, alsoHeld: bigint): Promise<TransferResult> {
    const result = this.db.transaction(() => this.transferNow(input, alsoHeld)).immediate();
    if (result.ok) this.fundsMoved();
    return result;
  }

  async listTransfers(accountId: string, limit = 100): Promise<TransferRecord[]> {
    return this.db
      .prepare<[{ account: string; limit: number }], TransferRow<number>>(LIST)
      .all({ account: accountId, limit })
      .map((row) => toTransferRecord(row, (at) => new Date(at)));
  }

  private transferNow(input: NewTransfer, alsoHeld: bigint): TransferResult {
    const available = this.db.prepare<[string], string>('SELECT CAST(balance - held AS TEXT) FROM accounts WHERE id = ?').pluck().get(input.fromAccountId);
    const destination = this.db.prepare<[string], number>('SELECT 1 FROM accounts WHERE id = ?').pluck().get(input.toAccountId);
    if (available === undefined || destination === undefined) throw new UnknownTransferAccountError('an account of the transfer does not exist');
    const admission = admitTransfer(input.amount, BigInt(available) - alsoHeld);
    if (!admission.ok) return admission;
    const transfer: TransferRecord = { ...input, ...newTransferIds(), createdAt: new Date() };
    const at = transfer.createdAt.getTime();
    this.db
      .prepare<[string, string, bigint, string, string, string | null, number, string]>(
        `INSERT INTO debits (id, account_id, amount, kind, order_id, source, actor, note, created_at, transfer_id)
         VALUES (?, ?, ?, 'transfer', NULL, ?, ?, ?, ?, ?)`,
      )
      .run(transfer.debitId, transfer.fromAccountId, transfer.amount, `transfer:${transfer.id}`, transfer.actor, transfer.note, at, transfer.id);
    this.db
      .prepare<[string, string, bigint, string, string | null, number, string]>(
        `INSERT INTO credits (id, account_id, amount, kind, actor, note, created_at, transfer_id) VALUES (?, ?, ?, 'transfer', ?, ?, ?, ?)`,
      )
      .run(transfer.creditId, transfer.toAccountId, transfer.amount, transfer.actor, transfer.note, at, transfer.id);
    const move = this.db.prepare<[bigint, string]>('UPDATE accounts SET balance = balance + ? WHERE id = ?');
    move.run(-transfer.amount, transfer.fromAccountId);
    move.run(transfer.amount, transfer.toAccountId);
    return { ok: true, transfer };
  }
}
