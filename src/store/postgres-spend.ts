/** What the PostgreSQL ledger says was spent: by a key in total, and by a key or an account in a period or a session. */
import type { Pool } from 'pg';
import type { BudgetScope, KeySpend, SessionScope } from './ledger-store';
import { memberOfBudget } from './budget-owner';

export async function keySpend(pool: Pool, keyId: string): Promise<KeySpend | null> {
  const { rows } = await pool.query<{ spend_limit: string | null; spent: string }>('SELECT spend_limit, spent FROM api_keys WHERE id = $1', [keyId]);
  if (rows.length === 0) return null;
  return { spendLimit: rows[0].spend_limit === null ? null : BigInt(rows[0].spend_limit), spent: BigInt(rows[0].spent) };
}

/**
 * Which charges a budget of each scope counts, as a condition on `charges` from parameter `$1` on, and
 * its parameters: a member's are their charges in the organisation (on charges_member_time).
 */
function scopeCondition(scope: BudgetScope, id: string): { readonly where: string; readonly values: readonly string[] } {
  switch (scope) {
    case 'key':
      return { where: 'key_id = $1', values: [id] };
    case 'member': {
      const { organisationId, memberAccountId } = memberOfBudget(id);
      return { where: 'account_id = $1 AND member_account_id = $2', values: [organisationId, memberAccountId] };
    }
    case 'account':
      return { where: 'account_id = $1', values: [id] };
  }
}

export async function periodSpend(pool: Pool, scope: BudgetScope, id: string, since: Date, until: Date): Promise<bigint> {
  const { where, values } = scopeCondition(scope, id);
  const next = values.length + 1;
  const { rows } = await pool.query<{ spent: string }>(`SELECT COALESCE(sum(cost), 0)::text AS spent FROM charges WHERE ${where} AND created_at >= $${next} AND created_at < $${next + 1}`, [
    ...values,
    since,
    until,
  ]);
  return BigInt(rows[0].spent);
}

export async function sessionSpend(pool: Pool, scope: SessionScope, id: string, sessionId: string): Promise<bigint> {
  const column = scope === 'account' ? 'account_id' : 'key_id';
  const { rows } = await pool.query<{ spent: string }>(`SELECT COALESCE(sum(cost), 0)::text AS spent FROM charges WHERE ${column} = $1 AND session_id = $2`, [
    id,
    sessionId,
  ]);
  return BigInt(rows[0].spent);
}
