/** Read-only views of the ledger: an account's balance, the charges, and the per-account totals. */
import type { Pool } from 'pg';
import type { AccountBalance, ChargeFilter, ChargeRecord, ChargeTotals, LedgerTotals } from './store';
import { chargeOrder, chargeTotalsSql, chargeWhere, type ChargeTotalsRow } from './charge-filter';
import { chargeSelectList, rowMappers, POSTGRES_CODEC, toLedgerTotals, type ChargeRow, type PostgresColumns, type TotalsRow } from './rows';

// BIGINT arrives from pg as text already.
const CHARGE_SELECT = chargeSelectList((column) => column);

const { toCharge } = rowMappers(POSTGRES_CODEC);

export async function balance(pool: Pool, accountId: string): Promise<AccountBalance> {
  const { rows } = await pool.query<{ balance: string; held: string }>('SELECT balance, held FROM accounts WHERE id = $1', [accountId]);
  if (rows.length === 0) throw new Error(`no account with id "${accountId}"`);
  return { balance: BigInt(rows[0].balance), held: BigInt(rows[0].held) };
}

export async function listCharges(pool: Pool, filter: ChargeFilter): Promise<ChargeRecord[]> {
  const where = chargeWhere(filter, (date) => date, (index) => `$${index}`);
  const count = where.params.length;
  const sql = `SELECT ${CHARGE_SELECT} FROM charges ${where.sql} ORDER BY ${chargeOrder(filter, 'seq')} LIMIT $${count + 1} OFFSET $${count + 2}`;
  const { rows } = await pool.query<ChargeRow<PostgresColumns>>(sql, [...where.params, filter.limit ?? 100, filter.offset ?? 0]);
  return rows.map(toCharge);
}

export async function chargeTotals(pool: Pool, filter: ChargeFilter): Promise<ChargeTotals> {
  const where = chargeWhere({ ...filter, page: undefined }, (date) => date, (index) => `$${index}`);
  const { rows } = await pool.query<ChargeTotalsRow>(chargeTotalsSql(where.sql, (expression) => `${expression}::text`), where.params);
  return { requests: Number(rows[0].requests), cost: BigInt(rows[0].cost), failed: Number(rows[0].failed) };
}

export async function ledgerTotals(pool: Pool): Promise<LedgerTotals[]> {
  // One statement, so every sum comes from the same snapshot.
  const { rows } = await pool.query<TotalsRow>(
    `SELECT a.id AS account_id, a.name,
              COALESCE((SELECT sum(amount) FROM credits c WHERE c.account_id = a.id), 0) AS credits,
              COALESCE((SELECT sum(cost) FROM charges g WHERE g.account_id = a.id), 0) AS charges,
              COALESCE((SELECT sum(amount) FROM debits d WHERE d.account_id = a.id), 0) AS debits,
              a.balance, a.held,
              COALESCE((SELECT sum(amount) FROM holds h WHERE h.account_id = a.id), 0) AS holds
         FROM accounts a ORDER BY a.created_at, a.seq`,
  );
  return rows.map(toLedgerTotals);
}
