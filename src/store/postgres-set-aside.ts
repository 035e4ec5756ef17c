/** Charges the PostgreSQL store refused to record, kept whole with the error (set-aside.ts says why). The store delegates here. */
import type { Pool } from 'pg';
import type { ChargeRecord, SetAsideCharge } from './ledger-store';
import { chargeJson, columnText } from './set-aside';

export async function setAsideCharge(pool: Pool, charge: ChargeRecord, error: string): Promise<void> {
  await pool.query(
    'INSERT INTO set_aside_charges (request_id, account_id, error, record, created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (request_id) DO NOTHING',
    [columnText(charge.requestId), columnText(charge.accountId), columnText(error, 2000), chargeJson(charge), new Date()],
  );
}

export async function listSetAsideCharges(pool: Pool, limit: number): Promise<SetAsideCharge[]> {
  const { rows } = await pool.query<{ request_id: string; account_id: string; error: string; record: string; created_at: Date }>(
    'SELECT request_id, account_id, error, record, created_at FROM set_aside_charges ORDER BY created_at DESC, request_id LIMIT $1',
    [limit],
  );
  return rows.map((row) => ({ requestId: row.request_id, accountId: row.account_id, error: row.error, record: row.record, createdAt: row.created_at }));
}
