/** Credits to an account, given by an operator or claimed with a redemption code. */
import { randomBytes } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { redemptionVerdict } from '../money/redemption';
import type { CreditRecord, NewCredit, RedeemResult, RedemptionCodeRecord } from './store';
import { rowMappers, POSTGRES_CODEC, type CodeRow, type CreditRow, type PostgresColumns } from './rows';
import { inTransaction } from './postgres-tx';

const CREDIT_COLUMNS = 'id, account_id, amount, kind, actor, note, created_at';
const CODE_COLUMNS = 'id, amount, created_at, created_by, expires_at, redeemed_by, redeemed_at';

const { toCredit, toCode } = rowMappers(POSTGRES_CODEC);

function newId(prefix: 'cr_' | 'rc_'): string {
  return prefix + randomBytes(8).toString('hex');
}

export async function addCredit(pool: Pool, input: NewCredit): Promise<CreditRecord> {
  if (input.amount <= 0n) throw new RangeError('a credit must be a positive amount');
  const record: CreditRecord = { ...input, id: newId('cr_'), createdAt: new Date() };
  await inTransaction(pool, (client) => insertCredit(client, record));
  return record;
}

export async function listCredits(pool: Pool, accountId: string, limit = 100): Promise<CreditRecord[]> {
  const { rows } = await pool.query<CreditRow<PostgresColumns>>(
    `SELECT ${CREDIT_COLUMNS} FROM credits WHERE account_id = $1 ORDER BY created_at DESC, seq DESC LIMIT $2`,
    [accountId, limit],
  );
  return rows.map(toCredit);
}

export async function createRedemptionCodes(
  pool: Pool,
  input: { hashes: readonly Buffer[]; amount: bigint; createdBy: string | null; expiresAt: Date | null },
): Promise<RedemptionCodeRecord[]> {
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
  await inTransaction(pool, async (client) => {
    for (const [index, record] of records.entries()) {
      await client.query(
        'INSERT INTO redemption_codes (id, hash, amount, created_at, created_by, expires_at) VALUES ($1, $2, $3, $4, $5, $6)',
        [record.id, input.hashes[index], String(record.amount), record.createdAt, record.createdBy, record.expiresAt],
      );
    }
  });
  return records;
}

export function redeemCode(pool: Pool, hash: Buffer, accountId: string, actor: string | null): Promise<RedeemResult> {
  return inTransaction(pool, async (client): Promise<RedeemResult> => {
    // FOR UPDATE queues concurrent redeemers of the same code; each later one then reads the
    // committed row, already redeemed.
    const { rows } = await client.query<CodeRow<PostgresColumns>>(`SELECT ${CODE_COLUMNS} FROM redemption_codes WHERE hash = $1 FOR UPDATE`, [hash]);
    const code = rows[0] === undefined ? null : toCode(rows[0]);
    const now = new Date();
    const verdict = redemptionVerdict(code, now);
    if (!verdict.ok) return verdict;
    const credit: CreditRecord = { id: newId('cr_'), accountId, amount: verdict.amount, kind: 'redemption', actor, note: verdict.note, createdAt: now };
    await insertCredit(client, credit);
    // Conditional as well, so the code can never be claimed twice even if the lock above is removed.
    const claimed = await client.query(
      'UPDATE redemption_codes SET redeemed_by = $1, redeemed_at = $2, credit_id = $3 WHERE id = $4 AND redeemed_at IS NULL',
      [accountId, credit.createdAt, credit.id, verdict.codeId],
    );
    if (claimed.rowCount === 0) throw new Error('redemption code claimed concurrently');
    return { ok: true, credit };
  });
}

export async function listRedemptionCodes(pool: Pool, limit = 100): Promise<RedemptionCodeRecord[]> {
  const { rows } = await pool.query<CodeRow<PostgresColumns>>(
    `SELECT ${CODE_COLUMNS} FROM redemption_codes ORDER BY created_at DESC, seq DESC LIMIT $1`,
    [limit],
  );
  return rows.map(toCode);
}

async function insertCredit(client: PoolClient, record: CreditRecord): Promise<void> {
  await client.query(
    'INSERT INTO credits (id, account_id, amount, kind, actor, note, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
    [record.id, record.accountId, String(record.amount), record.kind, record.actor, record.note, record.createdAt],
  );
  await client.query('UPDATE accounts SET balance = balance + $1::bigint WHERE id = $2', [String(record.amount), record.accountId]);
}
