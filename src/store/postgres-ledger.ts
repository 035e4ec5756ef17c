/**
 * The ledger half of the PostgreSQL store: holds, charges, credits and redemption codes, with the
 * semantics of the SQLite ledger. Many instances share the database, so every "check, then take" is a
 * conditional UPDATE: under READ COMMITTED a concurrent writer waits for the row lock and then
 * re-evaluates the condition against the committed row, so two requests can never both spend the
 * same funds.
 *
 * The hot paths cost a fixed number of round trips, whatever the batch size: a hold is one call to a
 * SQL function, and a batch of charges is one transaction of set-based statements over arrays
 * (`unnest`), with the per-charge arithmetic done here on the locked rows.
 *
 * pg returns BIGINT and sums as strings and every amount is sent as a string, so no amount ever passes
 * through a JS number.
 */
import { randomBytes } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import type {
  AccountBalance,
  ChargeFilter,
  ChargeRecord,
  CreditRecord,
  Hold,
  HoldResult,
  LedgerTotals,
  NewCredit,
  RedeemResult,
  RedemptionCodeRecord,
} from './store';
import {
  chargeParams,
  rowMappers,
  POSTGRES_CODEC,
  toLedgerTotals,
  type ChargeParams,
  type ChargeRow,
  type CodeRow,
  type CreditRow,
  type PostgresColumns,
  type TotalsRow,
} from './rows';

const CHARGE_COLUMNS = `request_id, account_id, key_id, model, provider, endpoint, input_tokens, cache_write_tokens,
  cache_read_tokens, output_tokens, cost, usage_source, status, outcome, latency_ms, created_at`;
const CREDIT_COLUMNS = 'id, account_id, amount, kind, actor, note, created_at';
const CODE_COLUMNS = 'id, amount, created_at, created_by, expires_at, redeemed_by, redeemed_at';

/** SQLSTATEs after which the whole transaction can simply run again: deadlock_detected, serialization_failure. */
const SERIALIZATION_FAILURE = '40001';
const RETRYABLE_CODES = new Set(['40P01', SERIALIZATION_FAILURE]);
const TRANSACTION_ATTEMPTS = 3;

function newId(prefix: 'cr_' | 'rc_'): string {
  return prefix + randomBytes(8).toString('hex');
}

function nonNegative(amount: bigint): bigint {
  return amount < 0n ? 0n : amount;
}

/** An error the server sent (it has a SQLSTATE); anything else may have left the connection unusable. */
function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * Runs `work` in one transaction on one pooled connection and commits when `keep(result)` holds
 * (rolls back otherwise). A deadlock or serialization failure rolls everything back, so the work is
 * simply run again. A connection that failed outside SQL (timeout, reset) is destroyed rather than
 * returned to the pool, which also makes the server roll back.
 */
export async function inTransaction<T>(
  pool: Pool,
  work: (client: PoolClient) => Promise<T>,
  keep: (result: T) => boolean = () => true,
): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query(keep(result) ? 'COMMIT' : 'ROLLBACK');
      client.release();
      return result;
    } catch (error) {
      const state = sqlState(error);
      if (state === undefined) {
        client.release(error as Error);
        throw error;
      }
      try {
        await client.query('ROLLBACK');
        client.release();
      } catch (rollbackError) {
        client.release(rollbackError as Error);
      }
      if (!RETRYABLE_CODES.has(state) || attempt >= TRANSACTION_ATTEMPTS) throw error;
    }
  }
}

const { toCharge, toCredit, toCode } = rowMappers(POSTGRES_CODEC);

export class PostgresLedger {
  constructor(private readonly pool: Pool) {}

  async holdFunds(hold: Hold): Promise<HoldResult> {
    // One statement is its own transaction: the function's steps all happen or none do.
    const { rows } = await retried(() =>
      this.pool.query<{ refused: 'balance' | 'key_spend_limit' | null; available: string | null }>({
        name: 'tollgate_hold_funds',
        text: 'SELECT refused, available FROM tollgate_hold_funds($1, $2, $3, $4::bigint, $5, $6)',
        values: [hold.requestId, hold.accountId, hold.keyId, String(hold.amount), new Date(), hold.expiresAt],
      }),
    );
    const { refused, available } = rows[0];
    return refused === null ? { ok: true } : { ok: false, reason: refused, available: BigInt(available ?? '0') };
  }

  recordCharges(charges: readonly ChargeRecord[]): Promise<number> {
    if (charges.length === 0) return Promise.resolve(0);
    // A later occurrence of a request id could change nothing: its hold is gone and its insert conflicts.
    const batch = firstOccurrences(charges);
    const requestIds = batch.map((charge) => charge.requestId);
    return inTransaction(this.pool, async (client) => {
      const accounts = await lockRows(client, unique(batch.map((c) => c.accountId)), unique(batch.map((c) => c.keyId)), requestIds);
      const { holds, recorded } = await takeHolds(client, requestIds);
      const added = priceCharges(batch, accounts, holds, recorded);
      if (added.length === 0 && holds.size === 0) return 0;
      const { rows } = await client.query<{ request_id: string }>({
        name: 'tollgate_insert_and_settle',
        text: INSERT_AND_SETTLE,
        values: settleParams(added, holds),
      });
      // Only a charge recorded since `takeHolds` looked (by a batch that did not lock the same account)
      // can conflict here; the caps assumed it would not, so roll back and price the batch again.
      if (rows.length !== added.length) {
        throw Object.assign(new Error('a charge of the batch was recorded concurrently'), { code: SERIALIZATION_FAILURE });
      }
      return rows.length;
    });
  }

  releaseHolds(requestIds: readonly string[]): Promise<number> {
    const ids = unique(requestIds);
    if (ids.length === 0) return Promise.resolve(0);
    return inTransaction(this.pool, async (client) => {
      await lockRows(client, [], [], ids);
      const { rows } = await client.query<{ released: string }>({ name: 'tollgate_release_holds', text: RELEASE_HOLDS, values: [ids] });
      return Number(rows[0].released);
    });
  }

  async expiredHolds(now: Date, limit: number): Promise<Hold[]> {
    const { rows } = await this.pool.query<{ request_id: string; account_id: string; key_id: string; amount: string; expires_at: Date }>(
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

  async credit(input: NewCredit): Promise<CreditRecord> {
    if (input.amount <= 0n) throw new RangeError('a credit must be a positive amount');
    const record: CreditRecord = { ...input, id: newId('cr_'), createdAt: new Date() };
    await inTransaction(this.pool, (client) => insertCredit(client, record));
    return record;
  }

  async balance(accountId: string): Promise<AccountBalance> {
    const { rows } = await this.pool.query<{ balance: string; held: string }>('SELECT balance, held FROM accounts WHERE id = $1', [accountId]);
    if (rows.length === 0) throw new Error(`no account with id "${accountId}"`);
    return { balance: BigInt(rows[0].balance), held: BigInt(rows[0].held) };
  }

  async listCharges(filter: ChargeFilter): Promise<ChargeRecord[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (condition: string, value: unknown) => {
      params.push(value);
      where.push(condition.replace('?', `$${params.length}`));
    };
    if (filter.accountId !== undefined) add('account_id = ?', filter.accountId);
    if (filter.keyId !== undefined) add('key_id = ?', filter.keyId);
    if (filter.model !== undefined) add('model = ?', filter.model);
    if (filter.since !== undefined) add('created_at >= ?', filter.since);
    if (filter.until !== undefined) add('created_at < ?', filter.until);
    params.push(filter.limit ?? 100);
    const sql = `SELECT ${CHARGE_COLUMNS} FROM charges ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
                 ORDER BY created_at DESC, seq DESC LIMIT $${params.length}`;
    const { rows } = await this.pool.query<ChargeRow<PostgresColumns>>(sql, params);
    return rows.map(toCharge);
  }

  async listCredits(accountId: string, limit = 100): Promise<CreditRecord[]> {
    const { rows } = await this.pool.query<CreditRow<PostgresColumns>>(
      `SELECT ${CREDIT_COLUMNS} FROM credits WHERE account_id = $1 ORDER BY created_at DESC, seq DESC LIMIT $2`,
      [accountId, limit],
    );
    return rows.map(toCredit);
  }

  async ledgerTotals(): Promise<LedgerTotals[]> {
    // One statement, so every sum comes from the same snapshot.
    const { rows } = await this.pool.query<TotalsRow>(
      `SELECT a.id AS account_id, a.name,
              COALESCE((SELECT sum(amount) FROM credits c WHERE c.account_id = a.id), 0) AS credits,
              COALESCE((SELECT sum(cost) FROM charges g WHERE g.account_id = a.id), 0) AS charges,
              a.balance, a.held,
              COALESCE((SELECT sum(amount) FROM holds h WHERE h.account_id = a.id), 0) AS holds
         FROM accounts a ORDER BY a.created_at, a.seq`,
    );
    return rows.map(toLedgerTotals);
  }

  async createRedemptionCodes(input: { hashes: readonly Buffer[]; amount: bigint; createdBy: string | null; expiresAt: Date | null }): Promise<RedemptionCodeRecord[]> {
    if (input.amount <= 0n) throw new RangeError('a redemption code must be worth a positive amount');
    const now = new Date();
    const records: RedemptionCodeRecord[] = input.hashes.map(() => ({
      id: newId('rc_'),
      amount: input.amount,
      createdAt: now,
      createdBy: input.createdBy,
      expiresAt: input.expiresAt,
      redeemedBy: null,
      redeemedAt: null,
    }));
    await inTransaction(this.pool, async (client) => {
      for (const [index, record] of records.entries()) {
        await client.query(
          'INSERT INTO redemption_codes (id, hash, amount, created_at, created_by, expires_at) VALUES ($1, $2, $3, $4, $5, $6)',
          [record.id, input.hashes[index], String(record.amount), record.createdAt, record.createdBy, record.expiresAt],
        );
      }
    });
    return records;
  }

  redeemCode(hash: Buffer, accountId: string, actor: string | null): Promise<RedeemResult> {
    return inTransaction(this.pool, async (client): Promise<RedeemResult> => {
      // FOR UPDATE queues concurrent redeemers of the same code; each later one then reads the
      // committed row, already redeemed.
      const { rows } = await client.query<CodeRow<PostgresColumns>>(`SELECT ${CODE_COLUMNS} FROM redemption_codes WHERE hash = $1 FOR UPDATE`, [hash]);
      const code = rows[0];
      if (code === undefined) return { ok: false, reason: 'unknown' };
      if (code.redeemed_at !== null) return { ok: false, reason: 'used' };
      if (code.expires_at !== null && code.expires_at.getTime() <= Date.now()) return { ok: false, reason: 'expired' };
      const credit: CreditRecord = {
        id: newId('cr_'),
        accountId,
        amount: BigInt(code.amount),
        kind: 'redemption',
        actor,
        note: `redemption code ${code.id}`,
        createdAt: new Date(),
      };
      await insertCredit(client, credit);
      // Conditional as well, so the code can never be claimed twice even if the lock above is removed.
      const claimed = await client.query(
        'UPDATE redemption_codes SET redeemed_by = $1, redeemed_at = $2, credit_id = $3 WHERE id = $4 AND redeemed_at IS NULL',
        [accountId, credit.createdAt, credit.id, code.id],
      );
      if (claimed.rowCount === 0) throw new Error('redemption code claimed concurrently');
      return { ok: true, credit };
    });
  }

  async listRedemptionCodes(limit = 100): Promise<RedemptionCodeRecord[]> {
    const { rows } = await this.pool.query<CodeRow<PostgresColumns>>(
      `SELECT ${CODE_COLUMNS} FROM redemption_codes ORDER BY created_at DESC, seq DESC LIMIT $1`,
      [limit],
    );
    return rows.map(toCode);
  }
}

/** One autocommit statement, run again after a deadlock or serialization failure (it was rolled back whole). */
async function retried<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await run();
    } catch (error) {
      const state = sqlState(error);
      if (state === undefined || !RETRYABLE_CODES.has(state) || attempt >= TRANSACTION_ATTEMPTS) throw error;
    }
  }
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}

function firstOccurrences(charges: readonly ChargeRecord[]): ChargeRecord[] {
  const seen = new Set<string>();
  return charges.filter((charge) => !seen.has(charge.requestId) && seen.add(charge.requestId) !== undefined);
}

/** A hold `takeHolds` removed. */
interface TakenHold {
  accountId: string;
  keyId: string;
  amount: bigint;
}

/** A locked account's balance and held amount, as the batch's charges move them. */
interface Funds {
  balance: bigint;
  held: bigint;
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
async function lockRows(client: PoolClient, accountIds: readonly string[], keyIds: readonly string[], requestIds: readonly string[]): Promise<Map<string, Funds>> {
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
 * Prices the charges not yet recorded, exactly as the SQLite ledger does one charge at a time, in batch
 * order: removing a charge's hold un-holds it, the cost is capped at the hold or, without one, at what
 * the account has left (balance − held, never below zero) after the charges and un-holds before it.
 * A charge never exceeds what was held for it, and no balance ever goes below zero.
 */
function priceCharges(
  batch: readonly ChargeRecord[],
  accounts: ReadonlyMap<string, Funds>,
  holds: ReadonlyMap<string, TakenHold>,
  recorded: ReadonlySet<string>,
): ChargeParams<PostgresColumns>[] {
  const added: ChargeParams<PostgresColumns>[] = [];
  for (const charge of batch) {
    const hold = holds.get(charge.requestId);
    const holder = hold === undefined ? undefined : accounts.get(hold.accountId);
    if (hold !== undefined && holder !== undefined) holder.held -= hold.amount;
    const account = accounts.get(charge.accountId);
    const limit = hold?.amount ?? (account === undefined ? 0n : nonNegative(account.balance - account.held));
    const cost = charge.cost < limit ? charge.cost : limit;
    if (recorded.has(charge.requestId)) continue;
    if (account !== undefined) account.balance -= cost;
    added.push(chargeParams<PostgresColumns>(charge, cost, (at) => at));
  }
  return added;
}

/** The charges columns in insert order, each with the array type it is sent as. */
const CHARGE_INSERT: ReadonlyArray<readonly [keyof ChargeParams<PostgresColumns>, string]> = [
  ['request_id', 'text'], ['account_id', 'text'], ['key_id', 'text'], ['model', 'text'], ['provider', 'text'],
  ['endpoint', 'text'], ['input_tokens', 'int'], ['cache_write_tokens', 'int'], ['cache_read_tokens', 'int'],
  ['output_tokens', 'int'], ['cost', 'bigint'], ['usage_source', 'text'], ['status', 'int'], ['outcome', 'text'],
  ['latency_ms', 'int'], ['created_at', 'timestamptz'],
];
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
function sqlValue(value: string | number | bigint | Date | null): string | number | null {
  return typeof value === 'bigint' ? String(value) : value instanceof Date ? value.toISOString() : value;
}

function sumBy(entries: readonly (readonly [string, bigint])[]): Map<string, bigint> {
  const sums = new Map<string, bigint>();
  for (const [id, amount] of entries) sums.set(id, (sums.get(id) ?? 0n) + amount);
  return sums;
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

async function insertCredit(client: PoolClient, record: CreditRecord): Promise<void> {
  await client.query(
    'INSERT INTO credits (id, account_id, amount, kind, actor, note, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
    [record.id, record.accountId, String(record.amount), record.kind, record.actor, record.note, record.createdAt],
  );
  await client.query('UPDATE accounts SET balance = balance + $1::bigint WHERE id = $2', [String(record.amount), record.accountId]);
}
