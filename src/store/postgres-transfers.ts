/**
 * Transfers on PostgreSQL (see transfers.ts): both accounts are locked in the ledger's one lock order
 * (postgres-locks.ts), which every hold and charge of them takes too, so the source's figures read
 * under the lock are the ones the transfer rule judges and the entries are written against.
 */
import type { Pool } from 'pg';
import { admitTransfer } from '../money/transfer';
import { lockRows } from './postgres-locks';
import { inTransaction } from './postgres-tx';
import { newTransferIds, toTransferRecord, UnknownTransferAccountError, type NewTransfer, type TransferRecord, type TransferResult, type TransferRow, type TransferStore } from './transfers';

const LIST = `
  SELECT d.transfer_id, d.id AS debit_id, c.id AS credit_id, d.account_id AS from_account_id, c.account_id AS to_account_id,
         d.amount::text AS amount, d.actor, d.note, d.created_at
    FROM debits d JOIN credits c ON c.transfer_id = d.transfer_id
   WHERE d.kind = 'transfer' AND (d.account_id = $1 OR c.account_id = $1)
   ORDER BY d.created_at DESC, d.seq DESC LIMIT $2`;

export class PostgresTransfers implements TransferStore {
  constructor(private readonly pool: Pool) {}

  transfer(input: NewTransfer, alsoHeld: bigint): Promise<TransferResult> {
    return inTransaction(this.pool, async (client): Promise<TransferResult> => {
      const funds = await lockRows(client, [input.fromAccountId, input.toAccountId], [], []);
      const source = funds.get(input.fromAccountId);
      if (source === undefined || !funds.has(input.toAccountId)) throw new UnknownTransferAccountError('an account of the transfer does not exist');
      const admission = admitTransfer(input.amount, source.balance - source.held - alsoHeld);
      if (!admission.ok) return admission;
      const transfer: TransferRecord = { ...input, ...newTransferIds(), createdAt: new Date() };
      const amount = String(transfer.amount);
      await client.query(
        `INSERT INTO debits (id, account_id, amount, kind, order_id, source, actor, note, created_at, transfer_id)
         VALUES ($1, $2, $3::bigint, 'transfer', NULL, $4, $5, $6, $7, $8)`,
        [transfer.debitId, transfer.fromAccountId, amount, `transfer:${transfer.id}`, transfer.actor, transfer.note, transfer.createdAt, transfer.id],
      );
      await client.query(
        `INSERT INTO credits (id, account_id, amount, kind, actor, note, created_at, transfer_id) VALUES ($1, $2, $3::bigint, 'transfer', $4, $5, $6, $7)`,
        [transfer.creditId, transfer.toAccountId, amount, transfer.actor, transfer.note, transfer.createdAt, transfer.id],
      );
      await client.query('UPDATE accounts SET balance = balance - $1::bigint WHERE id = $2', [amount, transfer.fromAccountId]);
      await client.query('UPDATE accounts SET balance = balance + $1::bigint WHERE id = $2', [amount, transfer.toAccountId]);
      return { ok: true, transfer };
    });
  }

  async listTransfers(accountId: string, limit = 100): Promise<TransferRecord[]> {
    const { rows } = await this.pool.query<TransferRow<Date>>(LIST, [accountId, limit]);
    return rows.map((row) => toTransferRecord(row, (at) => at));
  }
}
