/**
 * The ledger half of the PostgreSQL store: holds, charges, credits and redemption codes, with the
 * semantics of the SQLite ledger. Many instances share the database, so every "check, then take" is a
 * conditional UPDATE: under READ COMMITTED a concurrent writer waits for the row lock and then
 * re-evaluates the condition against the committed row, so two requests can never both spend the
 * same funds.
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
import { chargeParams, rowMappers, POSTGRES_CODEC, toLedgerTotals, type ChargeRow, type CodeRow, type CreditRow, type PostgresColumns, type TotalsRow } from './rows';

const CHARGE_COLUMNS = `request_id, account_id, key_id, model, provider, endpoint, input_tokens, cache_write_tokens,
  cache_read_tokens, output_tokens, cost, usage_source, status, outcome, latency_ms, created_at`;
const CREDIT_COLUMNS = 'id, account_id, amount, kind, actor, note, created_at';
const CODE_COLUMNS = 'id, amount, created_at, created_by, expires_at, redeemed_by, redeemed_at';

/** SQLSTATEs after which the whole transaction can simply run again: deadlock_detected, serialization_failure. */
const RETRYABLE_CODES = new Set(['40P01', '40001']);
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

  holdFunds(hold: Hold): Promise<HoldResult> {
    const amount = String(hold.amount);
    return inTransaction(
      this.pool,
      async (client): Promise<HoldResult> => {
        const account = await client.query(
          'UPDATE accounts SET held = held + $1::bigint WHERE id = $2 AND balance - held >= $1::bigint',
          [amount, hold.accountId],
        );
        if (account.rowCount === 0) {
          const left = await client.query<{ left: string }>('SELECT balance - held AS left FROM accounts WHERE id = $1', [hold.accountId]);
          return { ok: false, reason: 'balance', available: nonNegative(BigInt(left.rows[0]?.left ?? '0')) };
        }
        const key = await client.query(
          `UPDATE api_keys SET held = held + $1::bigint
            WHERE id = $2 AND (spend_limit IS NULL OR spend_limit - spent - held >= $1::bigint)`,
          [amount, hold.keyId],
        );
        if (key.rowCount === 0) {
          // `keep` rolls the account's part back: the whole hold happens or none of it does.
          const left = await client.query<{ left: string | null }>('SELECT spend_limit - spent - held AS left FROM api_keys WHERE id = $1', [hold.keyId]);
          return { ok: false, reason: 'key_spend_limit', available: nonNegative(BigInt(left.rows[0]?.left ?? '0')) };
        }
        await client.query(
          'INSERT INTO holds (request_id, account_id, key_id, amount, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)',
          [hold.requestId, hold.accountId, hold.keyId, amount, new Date(), hold.expiresAt],
        );
        return { ok: true };
      },
      (result) => result.ok,
    );
  }

  recordCharges(charges: readonly ChargeRecord[]): Promise<number> {
    // Every transaction locks accounts before keys, and batches lock them in one global order, so two
    // batches for overlapping accounts wait for each other instead of deadlocking. The sort is stable:
    // a request id repeated in the batch is still recorded by its first occurrence.
    const ordered = [...charges].sort((a, b) => compare(a.accountId, b.accountId) || compare(a.keyId, b.keyId));
    return inTransaction(this.pool, async (client) => {
      let recorded = 0;
      for (const charge of ordered) {
        const held = await removeHold(client, charge.requestId);
        // A charge never exceeds what was held for it; one whose hold the sweeper already released
        // takes at most what the account has left, so no balance ever goes below zero.
        const limit = held ?? (await available(client, charge.accountId));
        const cost = charge.cost < limit ? charge.cost : limit;
        const inserted = await client.query(
          `INSERT INTO charges (request_id, account_id, key_id, model, provider, endpoint, input_tokens,
             cache_write_tokens, cache_read_tokens, output_tokens, cost, usage_source, status, outcome, latency_ms, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
           ON CONFLICT (request_id) DO NOTHING`,
          // chargeParams lists the columns in this order; amounts are sent as strings.
          Object.values({ ...chargeParams<PostgresColumns>(charge, cost, (at) => at), cost: String(cost) }),
        );
        if (inserted.rowCount === 0) continue;
        recorded += 1;
        if (cost > 0n) {
          await client.query('UPDATE accounts SET balance = balance - $1::bigint WHERE id = $2', [String(cost), charge.accountId]);
          await client.query('UPDATE api_keys SET spent = spent + $1::bigint WHERE id = $2', [String(cost), charge.keyId]);
        }
      }
      return recorded;
    });
  }

  releaseHolds(requestIds: readonly string[]): Promise<number> {
    const ordered = [...new Set(requestIds)].sort(compare);
    return inTransaction(this.pool, async (client) => {
      let released = 0;
      for (const id of ordered) if ((await removeHold(client, id)) !== null) released += 1;
      return released;
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

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Removes a hold and un-holds its amount; returns the amount, or null when there was no hold. */
async function removeHold(client: PoolClient, requestId: string): Promise<bigint | null> {
  const { rows } = await client.query<{ account_id: string; key_id: string; amount: string }>(
    'DELETE FROM holds WHERE request_id = $1 RETURNING account_id, key_id, amount',
    [requestId],
  );
  const hold = rows[0];
  if (hold === undefined) return null;
  await client.query('UPDATE accounts SET held = held - $1::bigint WHERE id = $2', [hold.amount, hold.account_id]);
  await client.query('UPDATE api_keys SET held = held - $1::bigint WHERE id = $2', [hold.amount, hold.key_id]);
  return BigInt(hold.amount);
}

/** What the account can still pay, with its row locked until the transaction ends so it stays true. */
async function available(client: PoolClient, accountId: string): Promise<bigint> {
  const { rows } = await client.query<{ left: string }>('SELECT balance - held AS left FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
  return nonNegative(BigInt(rows[0]?.left ?? '0'));
}

async function insertCredit(client: PoolClient, record: CreditRecord): Promise<void> {
  await client.query(
    'INSERT INTO credits (id, account_id, amount, kind, actor, note, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
    [record.id, record.accountId, String(record.amount), record.kind, record.actor, record.note, record.createdAt],
  );
  await client.query('UPDATE accounts SET balance = balance + $1::bigint WHERE id = $2', [String(record.amount), record.accountId]);
}
