/** Charges the SQLite store refused to record, kept whole with the error (set-aside.ts says why). The store delegates here. */
import type { SqliteDatabase } from './sqlite-driver';
import type { ChargeRecord, SetAsideCharge } from './ledger-store';
import { chargeJson, columnText } from './set-aside';

export function setAsideCharge(db: SqliteDatabase, charge: ChargeRecord, error: string): void {
  db.prepare('INSERT INTO set_aside_charges (request_id, account_id, error, record, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (request_id) DO NOTHING').run(
    columnText(charge.requestId),
    columnText(charge.accountId),
    columnText(error, 2000),
    chargeJson(charge),
    Date.now(),
  );
}

export function listSetAsideCharges(db: SqliteDatabase, limit: number): SetAsideCharge[] {
  const rows = db
    .prepare<[number], { request_id: string; account_id: string; error: string; record: string; created_at: number }>(
      'SELECT request_id, account_id, error, record, created_at FROM set_aside_charges ORDER BY created_at DESC, request_id LIMIT ?',
    )
    .all(limit);
  return rows.map((row) => ({ requestId: row.request_id, accountId: row.account_id, error: row.error, record: row.record, createdAt: new Date(row.created_at) }));
}
