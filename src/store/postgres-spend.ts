/** What the PostgreSQL ledger says was spent: by a key in total, and by a key or an account in a period or a session. */
import type { Pool } from 'pg';
import type { BudgetScope, KeySpend } from './ledger-store';

export async function keySpend(pool: Pool, keyId: string): Promise<KeySpend | null> {
  const { rows } = await pool.query<{ spend_limit: string | null; spent: string }>('SELECT spend_limit, spent FROM api_keys WHERE id = $1', [keyId]);
  if (rows.length === 0) return null;
  return { spendLimit: rows[0].spend_limit === null ? null : BigInt(rows[0].spend_limit), spent: BigInt(rows[0].spent) };
}

export async function periodSpend(pool: Pool, scope: BudgetScope, id: string, since: Date, until: Date): Promise<bigint> {
  const column = scope === 'account' ? 'account_id' : 'key_id';
  const { rows } = await pool.query<{ spent: string }>(
    `SELECT COALESCE(sum(cost), 0)::text AS spent FROM charges WHERE ${column} = $1 AND created_at >= $2 AND created_at < $3`,
    [id, since, until],
  );
  return BigInt(rows[0].spent);
}

export async function sessionSpend(pool: Pool, scope: BudgetScope, id: string, sessionId: string): Promise<bigint> {
  const column = scope === 'account' ? 'account_id' : 'key_id';
  const { rows } = await pool.query<{ spent: string }>(`SELECT COALESCE(sum(cost), 0)::text AS spent FROM charges WHERE ${column} = $1 AND session_id = $2`, [
    id,
    sessionId,
  ]);
  return BigInt(rows[0].spent);
}
