/**
 * Recording a batch of charges: one transaction of set-based statements over arrays (`unnest`),
 * whatever the batch size, with the per-charge arithmetic done here on the locked rows.
 */
import type { Pool, PoolClient } from 'pg';
import type { ChargeRecord } from './store';
import type { TokenKind } from '../protocols/types';
import { CHARGE_COLUMNS, chargeParams, TOKEN_COLUMNS, type ChargeParams, type PostgresColumns } from './rows';
import { lockRows, unique } from './postgres-locks';
import { inTransaction, SERIALIZATION_FAILURE } from './postgres-tx';

/** A hold `takeHolds` removed. */
interface TakenHold {
  accountId: string;
  keyId: string;
  amount: bigint;
}

export function recordCharges(pool: Pool, charges: readonly ChargeRecord[]): Promise<number> {
  if (charges.length === 0) return Promise.resolve(0);
  // A later occurrence of a request id could change nothing: its hold is gone and its insert conflicts.
  const batch = firstOccurrences(charges);
  const requestIds = batch.map((charge) => charge.requestId);
  return inTransaction(pool, async (client) => {
    // Locked in one order by every writer, so batches that share accounts queue instead of deadlocking.
    await lockRows(client, unique(batch.map((c) => c.accountId)), unique(batch.map((c) => c.keyId)), requestIds);
    const { holds, recorded } = await takeHolds(client, requestIds);
    const added = newCharges(batch, recorded);
    if (added.length === 0 && holds.size === 0) return 0;
    const { rows } = await client.query<{ request_id: string }>({
      name: 'tollgate_insert_and_settle',
      text: INSERT_AND_SETTLE,
      values: settleParams(added, holds),
    });
    // Only a charge recorded since `takeHolds` looked (by a batch that did not lock the same account)
    // can conflict here; the moves assumed it would not, so roll back and write the batch again.
    if (rows.length !== added.length) {
      throw Object.assign(new Error('a charge of the batch was recorded concurrently'), { code: SERIALIZATION_FAILURE });
    }
    return rows.length;
  });
}

function firstOccurrences(charges: readonly ChargeRecord[]): ChargeRecord[] {
  const seen = new Set<string>();
  return charges.filter((charge) => !seen.has(charge.requestId) && seen.add(charge.requestId) !== undefined);
}

/**
 * Deletes the batch's holds and lists the request ids already charged. A statement of its own, after
 * the locks: its snapshot then includes every batch that held them before us.
 */
const TAKE_HOLDS = `
  WITH taken AS (DELETE FROM holds WHERE request_id = ANY($1::text[]) RETURNING request_id, account_id, key_id, amount)
  SELECT request_id, account_id, key_id, amount FROM taken
  UNION ALL SELECT request_id, NULL, NULL, NULL FROM charges WHERE request_id = ANY($1::text[])`;

async function takeHolds(client: PoolClient, requestIds: readonly string[]): Promise<{ holds: Map<string, TakenHold>; recorded: Set<string> }> {
  const { rows } = await client.query<{ request_id: string; account_id: string | null; key_id: string | null; amount: string | null }>({
    name: 'tollgate_take_holds',
    text: TAKE_HOLDS,
    values: [requestIds],
  });
  const holds = new Map<string, TakenHold>();
  const recorded = new Set<string>();
  for (const row of rows) {
    if (row.account_id === null || row.key_id === null || row.amount === null) recorded.add(row.request_id);
    else holds.set(row.request_id, { accountId: row.account_id, keyId: row.key_id, amount: BigInt(row.amount) });
  }
  return { holds, recorded };
}

/**
 * The charges not yet recorded, as insert parameters, with the cost billing priced: a cost above the
 * hold is overage the charge records, and may take a balance below zero by that much, never by a race.
 */
function newCharges(batch: readonly ChargeRecord[], recorded: ReadonlySet<string>): ChargeParams<PostgresColumns>[] {
  return batch.filter((charge) => !recorded.has(charge.requestId)).map((charge) => chargeParams<PostgresColumns>(charge, (at) => at, (value) => value));
}

/** The array type each charges column is sent as. */
const COLUMN_TYPES: Readonly<Record<(typeof CHARGE_COLUMNS)[number], string>> = {
  request_id: 'text',
  client_request_id: 'text',
  account_id: 'text',
  key_id: 'text',
  model: 'text',
  provider: 'text',
  endpoint: 'text',
  ...(Object.fromEntries(Object.values(TOKEN_COLUMNS).map((column) => [column, 'bigint'])) as Record<(typeof TOKEN_COLUMNS)[TokenKind], string>),
  tool_calls: 'text',
  images: 'int',
  cost: 'bigint',
  held: 'bigint',
  overage: 'bigint',
  unbilled: 'bigint',
  upstream_cost: 'bigint',
  prices: 'text',
  service_tier: 'text',
  long_context: 'boolean',
  usage_source: 'text',
  status: 'int',
  outcome: 'text',
  latency_ms: 'int',
  created_at: 'timestamptz',
  session_id: 'text',
  requested_model: 'text',
  served_model: 'text',
  attempts: 'text',
  ttfb_ms: 'int',
  user_agent: 'text',
  origin: 'text',
  member_account_id: 'text',
};
const CHARGE_INSERT = CHARGE_COLUMNS.map((column) => [column, COLUMN_TYPES[column]] as const);
const UNHELD_PARAM = CHARGE_INSERT.length + 1;

/**
 * Inserts the priced charges (one array per column), then moves each account and key once: held down
 * by what its taken holds held, balance down and spent up by the charges actually inserted. Amounts
 * are summed per id first, since one statement may update a row only once.
 */
const INSERT_AND_SETTLE = `
  WITH added AS (
    INSERT INTO charges (${CHARGE_INSERT.map(([column]) => column).join(', ')})
    SELECT * FROM unnest(${CHARGE_INSERT.map(([, type], index) => `$${index + 1}::${type}[]`).join(', ')})
    ON CONFLICT (request_id) DO NOTHING
    RETURNING request_id, account_id, key_id, cost
  ), account_moves AS (
    SELECT id, sum(unheld)::bigint AS unheld, sum(charged)::bigint AS charged FROM (
      SELECT id, unheld, 0::bigint AS charged FROM unnest($${UNHELD_PARAM}::text[], $${UNHELD_PARAM + 1}::bigint[]) AS u (id, unheld)
      UNION ALL SELECT account_id, 0, cost FROM added
    ) moves GROUP BY id
  ), key_moves AS (
    SELECT id, sum(unheld)::bigint AS unheld, sum(charged)::bigint AS charged FROM (
      SELECT id, unheld, 0::bigint AS charged FROM unnest($${UNHELD_PARAM + 2}::text[], $${UNHELD_PARAM + 3}::bigint[]) AS u (id, unheld)
      UNION ALL SELECT key_id, 0, cost FROM added
    ) moves GROUP BY id
  ), accounts_moved AS (
    UPDATE accounts a SET held = a.held - m.unheld, balance = a.balance - m.charged
      FROM account_moves m WHERE a.id = m.id AND (m.unheld <> 0 OR m.charged <> 0)
  ), keys_moved AS (
    UPDATE api_keys k SET held = k.held - m.unheld, spent = k.spent + m.charged
      FROM key_moves m WHERE k.id = m.id AND (m.unheld <> 0 OR m.charged <> 0)
  )
  SELECT request_id FROM added`;

function settleParams(added: readonly ChargeParams<PostgresColumns>[], holds: ReadonlyMap<string, TakenHold>): unknown[] {
  const columns = CHARGE_INSERT.map(([column]) => added.map((row) => sqlValue(row[column])));
  const byAccount = sumBy([...holds.values()].map((hold) => [hold.accountId, hold.amount] as const));
  const byKey = sumBy([...holds.values()].map((hold) => [hold.keyId, hold.amount] as const));
  return [...columns, [...byAccount.keys()], [...byAccount.values()].map(String), [...byKey.keys()], [...byKey.values()].map(String)];
}

/** An array element as pg should send it: amounts as decimal strings, times as ISO (exact to the millisecond). */
function sqlValue(value: string | number | bigint | boolean | Date | null): string | number | boolean | null {
  return typeof value === 'bigint' ? String(value) : value instanceof Date ? value.toISOString() : value;
}

function sumBy(entries: readonly (readonly [string, bigint])[]): Map<string, bigint> {
  const sums = new Map<string, bigint>();
  for (const [id, amount] of entries) sums.set(id, (sums.get(id) ?? 0n) + amount);
  return sums;
}
