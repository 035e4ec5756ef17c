/**
 * Holds: funds set aside for a request in flight. A hold is one call to a SQL function; releasing a
 * batch of them is one set-based statement, after the ledger's locks.
 */
import type { Pool } from 'pg';
import type { BudgetCheck, BudgetScope, Hold, HoldResult } from './store';
import { memberOfBudget } from './budget-owner';
import { admit } from '../money/admission';
import { heldSession } from './held-session';
import { lockRows, unique } from './postgres-locks';
import { inTransaction, retried } from './postgres-tx';

type HoldQuery = Pick<Pool, 'query'>;

export async function holdFunds(pool: Pool, hold: Hold): Promise<HoldResult> {
  if ((hold.budgets?.length ?? 0) + (hold.sessionBudgets?.length ?? 0) > 0) return holdWithinBudgets(pool, hold);
  // One statement is its own transaction: the function's steps all happen or none do.
  return retried(() => holdStatement(pool, hold));
}

async function holdStatement(client: HoldQuery, hold: Hold): Promise<HoldResult> {
  const { rows } = await client.query<{ refused: 'balance' | 'key_spend_limit' | null; available: string | null }>({
    name: 'tollgate_hold_funds',
    text: 'SELECT refused, available FROM tollgate_hold_funds($1, $2, $3, $4::bigint, $5, $6)',
    values: [hold.requestId, hold.accountId, hold.keyId, String(hold.amount), new Date(), hold.expiresAt],
  });
  const { refused, available } = rows[0];
  return refused === null ? { ok: true } : { ok: false, reason: refused, available: BigInt(available ?? '0') };
}

/**
 * A budget's spend in its period (the ledger's charges) and what its key, member or account holds now:
 * one statement per scope, so each reads its index. A member's holds are the rows that name them.
 */
const BUDGET_SPEND: Readonly<Record<BudgetScope, string>> = {
  key: `
    SELECT COALESCE((SELECT sum(cost) FROM charges WHERE key_id = $1 AND created_at >= $2 AND created_at < $3), 0)::text AS spent,
           COALESCE((SELECT held FROM api_keys WHERE id = $1), 0)::text AS held`,
  member: `
    SELECT COALESCE((SELECT sum(cost) FROM charges WHERE account_id = $1 AND member_account_id = $2 AND created_at >= $3 AND created_at < $4), 0)::text AS spent,
           COALESCE((SELECT sum(amount) FROM holds WHERE account_id = $1 AND member_account_id = $2), 0)::text AS held`,
  account: `
    SELECT COALESCE((SELECT sum(cost) FROM charges WHERE account_id = $1 AND created_at >= $2 AND created_at < $3), 0)::text AS spent,
           COALESCE((SELECT held FROM accounts WHERE id = $1), 0)::text AS held`,
};

/** The parameters before the period's of a budget's statement: a member's are the organisation and the member. */
function budgetOwnerValues(budget: BudgetCheck): string[] {
  if (budget.scope !== 'member') return [budget.id];
  const { organisationId, memberAccountId } = memberOfBudget(budget.id);
  return [organisationId, memberAccountId];
}

/**
 * What a key or an account was charged in one session, and what that session's holds hold now: one
 * statement per column, so each reads its index (charges_key_session, charges_account_session).
 */
const SESSION_SPEND = {
  key: `
    SELECT COALESCE((SELECT sum(cost) FROM charges WHERE key_id = $1 AND session_id = $2), 0)::text AS spent,
           COALESCE((SELECT sum(amount) FROM holds WHERE key_id = $1 AND session_id = $2), 0)::text AS held`,
  account: `
    SELECT COALESCE((SELECT sum(cost) FROM charges WHERE account_id = $1 AND session_id = $2), 0)::text AS spent,
           COALESCE((SELECT sum(amount) FROM holds WHERE account_id = $1 AND session_id = $2), 0)::text AS held`,
} as const;

/** What the key's spend limit leaves (null: no limit); no row when the key is not there. */
const KEY_LEFT = 'SELECT (spend_limit - spent - held)::text AS left FROM api_keys WHERE id = $1';

/**
 * With budgets (of periods or sessions), the figures are read under the account's row lock, which
 * every hold and every charge of the account takes first (no hold or charge of its keys can move them in between), and judged by the
 * admission rule (`src/money/admission.ts`); the hold statement then takes what was admitted. Without
 * budgets the hold statement alone is the rule's first two steps, in the same order, in one round trip
 * (the admission test runs both on the same cases).
 */
function holdWithinBudgets(pool: Pool, hold: Hold): Promise<HoldResult> {
  return inTransaction(
    pool,
    async (client): Promise<HoldResult> => {
      const funds = (await lockRows(client, [hold.accountId], [], [])).get(hold.accountId);
      if (funds === undefined) return { ok: false, reason: 'balance', available: 0n };
      const key = await client.query<{ left: string | null }>({ name: 'tollgate_key_left', text: KEY_LEFT, values: [hold.keyId] });
      if (key.rows.length === 0) return { ok: false, reason: 'key_spend_limit', available: 0n };
      const lefts = [];
      for (const budget of hold.budgets ?? []) {
        const { rows } = await client.query<{ spent: string; held: string }>({
          name: `tollgate_budget_spend_${budget.scope}`,
          text: BUDGET_SPEND[budget.scope],
          values: [...budgetOwnerValues(budget), budget.start, budget.end],
        });
        lefts.push({ budget, left: budget.amount - BigInt(rows[0].spent) - BigInt(rows[0].held) });
      }
      const sessionBudgets = [];
      for (const budget of hold.sessionBudgets ?? []) {
        const { rows } = await client.query<{ spent: string; held: string }>({
          name: `tollgate_session_spend_${budget.scope}`,
          text: SESSION_SPEND[budget.scope],
          values: [budget.id, budget.sessionId],
        });
        sessionBudgets.push({ budget, spent: BigInt(rows[0].spent), held: BigInt(rows[0].held) });
      }
      const keyLeft = key.rows[0].left;
      const admission = admit(hold.amount, { balanceLeft: funds.balance - funds.held, keyLeft: keyLeft === null ? null : BigInt(keyLeft), budgets: lefts, sessionBudgets });
      if (!admission.ok) return admission;
      const held = await holdStatement(client, hold);
      // A session's and a member's holds are the rows that name them: this one counts against both until charged.
      const session = heldSession(hold);
      const member = hold.memberAccountId ?? null;
      if (held.ok && (session !== null || member !== null)) {
        await client.query({ name: 'tollgate_hold_session_member', text: 'UPDATE holds SET session_id = $2, member_account_id = $3 WHERE request_id = $1', values: [hold.requestId, session, member] });
      }
      return held;
    },
    (result) => result.ok,
  );
}

/** Deletes holds and un-holds their amounts, each account and key once; answers how many there were. */
const RELEASE_HOLDS = `
  WITH gone AS (DELETE FROM holds WHERE request_id = ANY($1::text[]) RETURNING account_id, key_id, amount),
  accounts_unheld AS (
    UPDATE accounts a SET held = a.held - g.amount
      FROM (SELECT account_id, sum(amount)::bigint AS amount FROM gone GROUP BY account_id) g WHERE a.id = g.account_id
  ), keys_unheld AS (
    UPDATE api_keys k SET held = k.held - g.amount
      FROM (SELECT key_id, sum(amount)::bigint AS amount FROM gone GROUP BY key_id) g WHERE k.id = g.key_id
  )
  SELECT count(*) AS released FROM gone`;

export function releaseHolds(pool: Pool, requestIds: readonly string[]): Promise<number> {
  const ids = unique(requestIds);
  if (ids.length === 0) return Promise.resolve(0);
  return inTransaction(pool, async (client) => {
    await lockRows(client, [], [], ids);
    const { rows } = await client.query<{ released: string }>({ name: 'tollgate_release_holds', text: RELEASE_HOLDS, values: [ids] });
    return Number(rows[0].released);
  });
}

export async function expiredHolds(pool: Pool, now: Date, limit: number): Promise<Hold[]> {
  const { rows } = await pool.query<{ request_id: string; account_id: string; key_id: string; amount: string; expires_at: Date }>(
    `SELECT request_id, account_id, key_id, amount, expires_at FROM holds
        WHERE expires_at < $1 ORDER BY expires_at, request_id LIMIT $2`,
    [now, limit],
  );
  return rows.map((row) => ({
    requestId: row.request_id,
    accountId: row.account_id,
    keyId: row.key_id,
    amount: BigInt(row.amount),
    expiresAt: row.expires_at,
  }));
}
