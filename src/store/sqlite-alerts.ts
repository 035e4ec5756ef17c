/** The alerts fired (budget, balance) in the SQLite store: recorded once, listed, their deliveries counted. The store delegates here. */
import type { SqliteDatabase, SqliteStatement } from './sqlite-driver';
import type { AlertRecord, NewAlert } from './audit-store';

interface AlertRow {
  id: string;
  once: string;
  account_id: string;
  key_id: string | null;
  kind: 'budget' | 'balance';
  body: string;
  created_at: number;
  delivered_at: number | null;
  attempts: number;
}

export class SqliteAlerts {
  private readonly insert: SqliteStatement<[string, string, string, string | null, string, string, number]>;
  private readonly select: SqliteStatement<[{ account: string | null; undelivered: number; limit: number }], AlertRow>;
  private readonly attempt: SqliteStatement<[number | null, string]>;

  constructor(db: SqliteDatabase) {
    this.insert = db.prepare(
      `INSERT INTO budget_alerts (id, once, account_id, key_id, kind, body, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (once) DO NOTHING`,
    );
    this.select = db.prepare(
      `SELECT id, once, account_id, key_id, kind, body, created_at, delivered_at, attempts FROM budget_alerts
        WHERE (@account IS NULL OR account_id = @account) AND (@undelivered = 0 OR delivered_at IS NULL)
        ORDER BY created_at DESC, rowid DESC LIMIT @limit`,
    );
    this.attempt = db.prepare('UPDATE budget_alerts SET attempts = attempts + 1, delivered_at = COALESCE(delivered_at, ?) WHERE id = ?');
  }

  record(alert: NewAlert): boolean {
    const { id, once, accountId, keyId, kind, body, createdAt } = alert;
    return this.insert.run(id, once, accountId, keyId, kind, body, createdAt.getTime()).changes > 0;
  }

  list(filter: { accountId?: string; undelivered?: boolean; limit?: number }): AlertRecord[] {
    const rows = this.select.all({ account: filter.accountId ?? null, undelivered: filter.undelivered === true ? 1 : 0, limit: filter.limit ?? 100 });
    return rows.map((row) => ({
      id: row.id,
      once: row.once,
      accountId: row.account_id,
      keyId: row.key_id,
      kind: row.kind,
      body: row.body,
      createdAt: new Date(row.created_at),
      deliveredAt: row.delivered_at === null ? null : new Date(row.delivered_at),
      attempts: row.attempts,
    }));
  }

  attempted(id: string, delivered: boolean, at: Date): void {
    this.attempt.run(delivered ? at.getTime() : null, id);
  }
}
