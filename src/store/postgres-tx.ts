/**
 * Transactions on the shared PostgreSQL store, and running them again after a deadlock or a
 * serialization failure (which roll the whole transaction back).
 */
import type { Pool, PoolClient } from 'pg';

/** SQLSTATEs after which the whole transaction can simply run again: deadlock_detected, serialization_failure. */
export const SERIALIZATION_FAILURE = '40001';
const RETRYABLE_CODES = new Set(['40P01', SERIALIZATION_FAILURE]);
const TRANSACTION_ATTEMPTS = 3;

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

/** One autocommit statement, run again after a deadlock or serialization failure (it was rolled back whole). */
export async function retried<T>(run: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await run();
    } catch (error) {
      const state = sqlState(error);
      if (state === undefined || !RETRYABLE_CODES.has(state) || attempt >= TRANSACTION_ATTEMPTS) throw error;
    }
  }
}
