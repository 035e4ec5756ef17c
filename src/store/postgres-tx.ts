/**
 * Transactions on the shared PostgreSQL store, and running them again after a deadlock, a
 * serialization failure (which roll the whole transaction back) or a connection lost before COMMIT
 * was sent (the server rolls back what a dead connection had begun).
 */
import type { Pool, PoolClient } from 'pg';

/** SQLSTATEs after which the whole transaction can simply run again: deadlock_detected, serialization_failure. */
export const SERIALIZATION_FAILURE = '40001';
const RETRYABLE_CODES = new Set(['40P01', SERIALIZATION_FAILURE]);
/**
 * SQLSTATEs of a connection the server is closing (admin_shutdown, crash_shutdown, cannot_connect_now):
 * `pg_terminate_backend` and a failover end a statement with these, and the transaction is gone with it.
 */
const CONNECTION_CLOSING_CODES = new Set(['57P01', '57P02', '57P03']);
const TRANSACTION_ATTEMPTS = 3;
/** A failover can end every pooled connection at once, idle ones included: enough tries to get past all of them. */
const RECONNECT_ATTEMPTS = 6;

/** An error the server sent (it has a SQLSTATE); anything else may have left the connection unusable. */
function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !SOCKET_CODES.has(code) ? code : undefined;
}

/**
 * Whether `error` says the connection itself is gone (reset, terminated by the server, timed out), as
 * opposed to the server refusing a statement: the work never committed and can run on another one.
 */
function isConnectionLost(error: unknown): boolean {
  const state = sqlState(error);
  if (state !== undefined) return CONNECTION_CLOSING_CODES.has(state) || state.startsWith('08');
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && SOCKET_CODES.has(code)) return true;
  return error instanceof Error && CONNECTION_MESSAGES.test(error.message);
}

/** Socket errors of a connection that is gone. */
const SOCKET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNREFUSED', 'ETIMEDOUT']);
/** What pg says when its connection ended under a query (it sets no code). */
const CONNECTION_MESSAGES = /Connection terminated|not queryable|connection error|timeout exceeded when trying to connect/i;

/**
 * Runs `work` in one transaction on one pooled connection and commits when `keep(result)` holds
 * (rolls back otherwise). A deadlock or serialization failure rolls everything back, so the work is
 * simply run again; so does a connection lost before COMMIT was sent (the server rolls back an
 * unfinished transaction when its connection ends). A connection lost during COMMIT is not retried:
 * the commit may have happened, and only the caller knows whether its work may run twice. A failed
 * connection is destroyed rather than returned to the pool.
 */
export async function inTransaction<T>(
  pool: Pool,
  work: (client: PoolClient) => Promise<T>,
  keep: (result: T) => boolean = () => true,
): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    const ignore = (): void => undefined;
    const client = await checkout(pool, ignore);
    let committing = false;
    try {
      await client.query('BEGIN');
      const result = await work(client);
      committing = true;
      await client.query(keep(result) ? 'COMMIT' : 'ROLLBACK');
      client.removeListener('error', ignore);
      client.release();
      return result;
    } catch (error) {
      const state = sqlState(error);
      if (state === undefined || isConnectionLost(error)) {
        client.release(error instanceof Error ? error : new Error(String(error)));
        if (!isConnectionLost(error) || committing || attempt >= RECONNECT_ATTEMPTS) throw error;
        continue;
      }
      try {
        await client.query('ROLLBACK');
        client.removeListener('error', ignore);
        client.release();
      } catch (rollbackError) {
        client.release(rollbackError as Error);
      }
      if (!RETRYABLE_CODES.has(state) || attempt >= TRANSACTION_ATTEMPTS) throw error;
    }
  }
}

/**
 * A pooled client with `onError` already listening. A checked-out client has no pool listener:
 * without one, a connection the server ends ('terminating connection due to administrator command')
 * is an unhandled 'error' event and the process exits. It is attached in pg's callback, not after an
 * `await`: the pool hands out a client while its socket's data is still being parsed, and an error
 * message in the same packet is emitted before any awaiting code runs.
 */
function checkout(pool: Pool, onError: (error: Error) => void): Promise<PoolClient> {
  return new Promise((resolve, reject) => {
    pool.connect((error, client) => {
      if (error !== undefined && error !== null) return reject(error);
      client!.on('error', onError);
      resolve(client!);
    });
  });
}

/**
 * Makes `pool.query` run a statement again, on another connection, when the server ended the one it
 * ran on (`pg_terminate_backend`, a failover, a restart: SQLSTATE 57P01-57P03). The server reports
 * that before the statement finishes, so it was rolled back and running it again is safe for any
 * statement. A connection that vanished without a word (reset, timeout) is not retried here: whether
 * the statement ran is unknown, and the caller decides (the ledger writer retries idempotently).
 */
export function retryTerminatedConnections(pool: Pool): void {
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  const retrying = async (...args: unknown[]): Promise<unknown> => {
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await query(...args);
      } catch (error) {
        const state = sqlState(error);
        if (state === undefined || !CONNECTION_CLOSING_CODES.has(state) || attempt >= RECONNECT_ATTEMPTS) throw error;
      }
    }
  };
  Object.assign(pool, { query: retrying });
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
