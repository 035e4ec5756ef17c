/** Usage analytics on PostgreSQL: one charge in full, the summaries, the keys' recent spend, usage per UTC day, each account's last request. */
import type { Pool } from 'pg';
import { chargeSelectList, rowMappers, POSTGRES_CODEC, type ChargeRow, type PostgresColumns } from './rows';
import type { ChargeRecord, DailyUsage, KeyActivity, UsageSummaryQuery, UsageSummaryRow } from './store';
import { summarySql, toSummaryRow, type SummaryDialect, type SummaryParams, type SummarySqlRow } from './usage-queries';

const CHARGE_SELECT = chargeSelectList((column) => column);
const { toCharge } = rowMappers(POSTGRES_CODEC);

export async function findCharge(pool: Pool, requestId: string): Promise<ChargeRecord | null> {
  const { rows } = await pool.query<ChargeRow<PostgresColumns>>(`SELECT ${CHARGE_SELECT} FROM charges WHERE request_id = $1`, [requestId]);
  return rows.length === 0 ? null : toCharge(rows[0]);
}

/** The summary statement with its positional parameters, numbered in the order the statement first names them. */
export function postgresSummarySql(query: UsageSummaryQuery): { sql: string; values: unknown[] } {
  const order: (keyof SummaryParams<Date>)[] = [];
  const dialect: SummaryDialect<Date> = {
    day: "((created_at AT TIME ZONE 'UTC')::date - DATE '1970-01-01')",
    models: "string_agg(DISTINCT model, ',')",
    text: (expression) => `COALESCE(${expression}, 0)::text`,
    param: (name) => {
      if (!order.includes(name)) order.push(name);
      return `$${order.indexOf(name) + 1}`;
    },
    date: (value) => value,
  };
  const { sql, params } = summarySql(query, dialect);
  return { sql, values: order.map((name) => params[name]) };
}

export async function usageSummary(pool: Pool, query: UsageSummaryQuery): Promise<UsageSummaryRow[]> {
  const { sql, values } = postgresSummarySql(query);
  const { rows } = await pool.query<SummarySqlRow<Date>>(sql, values);
  return rows.map((row) => toSummaryRow(row, (value) => value, query.groupBy));
}

export async function keyActivity(pool: Pool, accountId: string, dayStart: Date, monthStart: Date): Promise<KeyActivity[]> {
  // Per key through charges_key_time: a lookup each, however many charges the account has.
  const { rows } = await pool.query<{ key_id: string; last_used: Date | null; today: string; month: string }>(
    `SELECT k.id AS key_id,
            (SELECT max(created_at) FROM charges c WHERE c.key_id = k.id) AS last_used,
            COALESCE((SELECT sum(cost) FROM charges c WHERE c.key_id = k.id AND c.created_at >= $2), 0)::text AS today,
            COALESCE((SELECT sum(cost) FROM charges c WHERE c.key_id = k.id AND c.created_at >= $3), 0)::text AS month
       FROM api_keys k WHERE k.account_id = $1`,
    [accountId, dayStart, monthStart],
  );
  return rows.map((row) => ({ keyId: row.key_id, lastUsedAt: row.last_used, spentToday: BigInt(row.today), spentMonth: BigInt(row.month) }));
}

export async function lastRequests(pool: Pool): Promise<ReadonlyMap<string, Date>> {
  const { rows } = await pool.query<{ account_id: string; at: Date }>('SELECT account_id, max(created_at) AS at FROM charges GROUP BY account_id');
  return new Map(rows.map((row) => [row.account_id, row.at]));
}

export async function dailyUsage(pool: Pool, accountId: string | null, since: Date): Promise<DailyUsage[]> {
  const params: unknown[] = [since];
  let where = 'created_at >= $1';
  if (accountId !== null) {
    params.push(accountId);
    where += ' AND account_id = $2';
  }
  const { rows } = await pool.query<{ day: string; requests: number; cost: string }>(
    `SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, count(*)::int AS requests, sum(cost)::text AS cost
       FROM charges WHERE ${where}
      GROUP BY 1 ORDER BY 1`,
    params,
  );
  return rows.map((row) => ({ day: row.day, requests: row.requests, cost: BigInt(row.cost) }));
}
