/**
 * The one lock order of the ledger: every transaction that moves funds locks its accounts, then its
 * keys, each in id order, so concurrent transactions from any instance queue instead of deadlocking.
 */
import type { PoolClient } from 'pg';

/** A locked account's balance and held amount, as the batch's charges move them. */
export interface Funds {
  balance: bigint;
  held: bigint;
}

export function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}

/**
 * Locks accounts, then keys, each in id order. Every ledger transaction takes its rows in this one
 * order (a hold takes one account, then one key), so concurrent batches from any instance queue instead
 * of deadlocking. Besides the given ids it locks the account and key of every open hold for
 * `requestIds`, which the transaction will un-hold. The CTEs are materialised and the Append runs them
 * one after the other, so all the accounts are locked before the first key.
 */
const LOCK_ROWS = `
  WITH locked_accounts AS MATERIALIZED (
    SELECT id, balance, held FROM accounts
     WHERE id IN (SELECT unnest($1::text[]) UNION SELECT account_id FROM holds WHERE request_id = ANY($3::text[]))
     ORDER BY id FOR UPDATE
  ), locked_keys AS MATERIALIZED (
    SELECT id FROM api_keys
     WHERE id IN (SELECT unnest($2::text[]) UNION SELECT key_id FROM holds WHERE request_id = ANY($3::text[]))
     ORDER BY id FOR UPDATE
  )
  SELECT id, balance, held FROM locked_accounts
  UNION ALL SELECT id, NULL, NULL FROM locked_keys`;

/** Returns the locked accounts' funds (a locked row is read at its latest committed version). */
export async function lockRows(client: PoolClient, accountIds: readonly string[], keyIds: readonly string[], requestIds: readonly string[]): Promise<Map<string, Funds>> {
  const { rows } = await client.query<{ id: string; balance: string | null; held: string | null }>({
    name: 'tollgate_lock_rows',
    text: LOCK_ROWS,
    values: [accountIds, keyIds, requestIds],
  });
  const funds = new Map<string, Funds>();
  for (const row of rows) {
    if (row.balance !== null && row.held !== null) funds.set(row.id, { balance: BigInt(row.balance), held: BigInt(row.held) });
  }
  return funds;
}
