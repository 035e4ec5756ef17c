/** The alerts fired (budget, balance) in the PostgreSQL store: recorded once, listed, their deliveries counted. The store delegates here. */
import type { Pool } from 'pg';
import type { AlertRecord, NewAlert } from './audit-store';

/** True when this call recorded it (no alert with the same `once` existed). */
export async function recordAlert(pool: Pool, alert: NewAlert): Promise<boolean> {
  const { rowCount } = await pool.query(
    `INSERT INTO budget_alerts (id, once, account_id, key_id, kind, body, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (once) DO NOTHING`,
    [alert.id, alert.once, alert.accountId, alert.keyId, alert.kind, alert.body, alert.createdAt],
  );
  return rowCount === 1;
}

export async function listAlerts(pool: Pool, filter: { accountId?: string; undelivered?: boolean; limit?: number }): Promise<AlertRecord[]> {
  const { rows } = await pool.query<{
    id: string; once: string; account_id: string; key_id: string | null; kind: 'budget' | 'balance'; body: string; created_at: Date; delivered_at: Date | null; attempts: number;
  }>(
    `SELECT id, once, account_id, key_id, kind, body, created_at, delivered_at, attempts FROM budget_alerts
      WHERE ($1::text IS NULL OR account_id = $1) AND (NOT $2 OR delivered_at IS NULL)
      ORDER BY created_at DESC, seq DESC LIMIT $3`,
    [filter.accountId ?? null, filter.undelivered === true, filter.limit ?? 100],
  );
  return rows.map((row) => ({
    id: row.id,
    once: row.once,
    accountId: row.account_id,
    keyId: row.key_id,
    kind: row.kind,
    body: row.body,
    createdAt: row.created_at,
    deliveredAt: row.delivered_at,
    attempts: row.attempts,
  }));
}

export async function alertAttempted(pool: Pool, id: string, delivered: boolean, at: Date): Promise<void> {
  await pool.query('UPDATE budget_alerts SET attempts = attempts + 1, delivered_at = COALESCE(delivered_at, $2) WHERE id = $1', [id, delivered ? at : null]);
}
