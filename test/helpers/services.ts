/**
 * The machine's PostgreSQL and Redis for suites that need them: whether they answer, and a private
 * database or key prefix per run, removed afterwards. A suite whose service is down skips itself and
 * says so, so a machine without these services still gets a passing run.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { Redis } from 'ioredis';
import { Client } from 'pg';
// A PostgreSQL store needs TOLLGATE_SECRET_KEY: every suite that uses the database gets the tests' own.
import './test-secret-key';

export const PG_ADMIN_URL = process.env.TOLLGATE_TEST_PG_URL ?? `postgres://${encodeURIComponent(os.userInfo().username)}@127.0.0.1:5432/test`;
export const REDIS_URL = process.env.TOLLGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Why PostgreSQL cannot be used, or null when it answers. */
export async function postgresProblem(): Promise<string | null> {
  const client = new Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (error) {
    return `PostgreSQL not reachable at ${new URL(PG_ADMIN_URL).host} (${(error as Error).message})`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Why Redis cannot be used, or null when it answers. */
export async function redisProblem(): Promise<string | null> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 1000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
    return null;
  } catch (error) {
    return `Redis not reachable at ${REDIS_URL} (${(error as Error).message})`;
  } finally {
    redis.disconnect();
  }
}

export interface TestDatabase {
  readonly url: string;
  drop(): Promise<void>;
}

/** A fresh database for one suite; `drop()` ends other sessions on it and removes it. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `tollgate_test_${randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new Client({ connectionString: PG_ADMIN_URL });
      await client.connect();
      await client.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
      await client.query(`DROP DATABASE IF EXISTS ${name}`);
      await client.end();
    },
  };
}

/** A key prefix no other run uses, and a way to delete every key under it. */
export function redisTestPrefix(label: string): { prefix: string; clear(): Promise<void> } {
  const prefix = `tollgate-test:${label}:${randomBytes(4).toString('hex')}:`;
  return {
    prefix,
    async clear() {
      const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
      try {
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
          if (keys.length > 0) await redis.del(...keys);
          cursor = next;
        } while (cursor !== '0');
      } finally {
        redis.disconnect();
      }
    },
  };
}
