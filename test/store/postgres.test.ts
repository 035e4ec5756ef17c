/**
 * The PostgreSQL store against a real server: the Store contract, plus what only PostgreSQL has
 * (migrations shared by instances, LISTEN/NOTIFY revisions, timeouts). Each run creates its own
 * database through the admin URL and drops it afterwards. Without a reachable server the suite is
 * skipped, saying so.
 */
import { expectedVersions } from './migration-numbers';
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { Client } from 'pg';
import { generateApiKey } from '../../src/auth/keys';
import { POSTGRES_MIGRATIONS, applyPostgresMigrations } from '../../src/store/migrations/postgres';
import { openStore } from '../../src/store/open';
import { LISTENER_APPLICATION_NAME, PostgresStore, type PostgresStoreConfig } from '../../src/store/postgres';
import { describeStoreContract } from './contract';
import '../helpers/test-secret-key';

const ADMIN_URL = process.env.TOLLGATE_TEST_PG_URL ?? `postgres://${encodeURIComponent(os.userInfo().username)}@127.0.0.1:5432/test`;
const REACH_TIMEOUT_MS = 1_000;
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT']);
const TABLES = 'statements, invitations, memberships, relayed_responses, budget_alerts, audit, recovery_codes, second_factors, sessions, debits, payment_events, payment_leases, payment_profiles, payment_orders, redemption_codes, credits, charges, holds, api_keys, accounts';

/** Where the admin URL points, without user or password. */
function hostOf(url: string): string {
  return new URL(url).host;
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/** Why the server cannot be reached, or null when it answers; other failures (auth, no `test` database) throw. */
async function unreachable(url: string): Promise<string | null> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: REACH_TIMEOUT_MS });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if ((code !== undefined && UNREACHABLE_CODES.has(code)) || /timeout/i.test((error as Error).message)) return (error as Error).message;
    throw error;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function connected(url: string): Promise<Client> {
  const client = new Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `condition` until it holds or `ms` pass; returns whether it held. */
async function eventually(condition: () => boolean, ms = 3_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await sleep(20);
  }
  return condition();
}

describe('store/postgres', function () {
  let database: string | null = null;
  let url = '';
  /** A connection to the test database, for inspecting and emptying it. */
  let db: Client | null = null;

  const config = (extra: Partial<PostgresStoreConfig> = {}): PostgresStoreConfig => ({
    url,
    connect_timeout_ms: 2_000,
    statement_timeout_ms: 5_000,
    pool_size: 10,
    ...extra,
  });

  before(async function () {
    const problem = await unreachable(ADMIN_URL);
    if (problem !== null) {
      console.log(`      PostgreSQL not reachable at ${hostOf(ADMIN_URL)}: PostgreSQL store suite skipped (${problem})`);
      this.skip();
    }
    const name = `tollgate_test_${randomBytes(6).toString('hex')}`;
    const admin = await connected(ADMIN_URL);
    try {
      await admin.query(`CREATE DATABASE ${name}`);
    } finally {
      await admin.end();
    }
    database = name;
    url = withDatabase(ADMIN_URL, name);
    db = await connected(url);
  });

  after(async function () {
    await db?.end().catch(() => undefined);
    if (database === null) return;
    const admin = await connected(ADMIN_URL);
    try {
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    } finally {
      await admin.end();
    }
  });

  // First, while the database is still empty.
  describe('migrate', () => {
    it('numbers the migrations 1, 2, 3 … in order', () => {
      expect(POSTGRES_MIGRATIONS.map((migration) => migration.version)).to.deep.equal(expectedVersions(POSTGRES_MIGRATIONS));
    });

    it('lets several instances migrate a fresh database at once, each version applied once', async () => {
      const stores = [0, 1, 2].map(() => new PostgresStore(config()));
      try {
        await Promise.all(stores.map((store) => store.migrate()));
        const { rows } = await db!.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
        expect(rows.map((r) => r.version)).to.deep.equal(POSTGRES_MIGRATIONS.map((m) => m.version));
        expect(await applyPostgresMigrations(db!)).to.equal(0);
      } finally {
        await Promise.all(stores.map((store) => store.close()));
      }
    });

    it('rolls back a failing migration and leaves it pending', async () => {
      const next = POSTGRES_MIGRATIONS[POSTGRES_MIGRATIONS.length - 1].version + 1;
      const broken = [...POSTGRES_MIGRATIONS, { version: next, description: 'bad', sql: 'CREATE TABLE t (x int); NOT SQL' }];
      let caught: unknown;
      try {
        await applyPostgresMigrations(db!, broken);
      } catch (error) {
        caught = error;
      }
      expect(caught).to.be.instanceOf(Error);
      expect((await db!.query("SELECT to_regclass('t') AS t")).rows[0].t).to.equal(null);
      expect((await db!.query('SELECT max(version) AS v FROM schema_migrations')).rows[0].v).to.equal(next - 1);
    });

    it('refuses a database whose schema is newer than this build', async () => {
      await db!.query('INSERT INTO schema_migrations (version, applied_at) VALUES (999, now())');
      const store = new PostgresStore(config());
      try {
        let caught: unknown;
        try {
          await store.migrate();
        } catch (error) {
          caught = error;
        }
        expect((caught as Error).message).to.match(/newer than this build/);
      } finally {
        await store.close();
        await db!.query('DELETE FROM schema_migrations WHERE version = 999');
      }
    });
  });

  describeStoreContract(
    'store/postgres',
    async () => {
      const store = new PostgresStore(config());
      await store.migrate();
      return store;
    },
    async () => {
      await db!.query(`TRUNCATE ${TABLES}`);
    },
  );

  describe('shared by several instances', () => {
    let a: PostgresStore;
    let b: PostgresStore;

    beforeEach(async () => {
      a = new PostgresStore(config());
      b = new PostgresStore(config());
      await a.migrate();
      await b.migrate();
    });

    afterEach(async () => {
      await a.close();
      await b.close();
      await db!.query(`TRUNCATE ${TABLES}`);
    });

    it('moves keysRevision when another instance, or plain SQL, changes a key', async () => {
      const account = await b.createAccount({ name: 'alice', role: 'user' });
      const key = await b.createKey({ accountId: account.id, name: null, ...generateApiKey() });
      await sleep(200);
      const quiet = a.keysRevision();
      await sleep(200);
      expect(a.keysRevision(), 'unchanged while nothing changes').to.equal(quiet);

      await b.revokeKey(key.id);
      expect(await eventually(() => a.keysRevision() !== quiet), 'after a revocation elsewhere').to.equal(true);

      await sleep(200);
      const before = a.keysRevision();
      await db!.query('UPDATE accounts SET disabled = true WHERE id = $1', [account.id]);
      expect(await eventually(() => a.keysRevision() !== before), 'after an UPDATE in psql').to.equal(true);
    });

    it('moves keysRevision when another instance disables an account or changes a key\'s rate limits, not for a password', async () => {
      const account = await b.createAccount({ name: 'carol', role: 'user', email: 'carol@example.com' });
      const key = await b.createKey({ accountId: account.id, name: null, ...generateApiKey() });
      const settled = async () => {
        await sleep(200);
        return a.keysRevision();
      };

      let before = await settled();
      await b.setAccountDisabled(account.id, true);
      expect(await eventually(() => a.keysRevision() !== before), 'after disabling the account elsewhere').to.equal(true);

      before = await settled();
      await b.setKeyLimits(key.id, { rateLimits: { rpm: 5 } });
      expect(await eventually(() => a.keysRevision() !== before), 'after a rate-limit change elsewhere').to.equal(true);

      before = await settled();
      await db!.query("UPDATE accounts SET email = 'carol@example.org' WHERE id = $1", [account.id]);
      expect(await eventually(() => a.keysRevision() !== before), 'after an e-mail change in psql').to.equal(true);

      before = await settled();
      await b.setPassword(account.id, 'hash');
      await b.createSession({ accountId: account.id, hash: generateApiKey().hash, kind: 'session', name: null, expiresAt: null });
      await sleep(300);
      expect(a.keysRevision(), 'a password or a session is not a key change').to.equal(before);
    });

    it('moves keysRevision when its listener connection drops, and listens again afterwards', async () => {
      await sleep(200);
      const before = a.keysRevision();
      await db!.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1', [
        LISTENER_APPLICATION_NAME,
      ]);
      expect(await eventually(() => a.keysRevision() !== before), 'after the drop').to.equal(true);
      // Both instances reconnect on their own; then a change is seen through the new connection.
      const listening = async () => {
        const { rows } = await db!.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1', [
          LISTENER_APPLICATION_NAME,
        ]);
        return rows[0].n as number;
      };
      const deadline = Date.now() + 5_000;
      while ((await listening()) < 2 && Date.now() < deadline) await sleep(50);
      expect(await listening()).to.equal(2);
      await sleep(200);
      const reconnected = a.keysRevision();
      expect(a.keysRevision(), 'stable again once listening').to.equal(reconnected);
      await b.createAccount({ name: 'bob', role: 'user' });
      expect(await eventually(() => a.keysRevision() !== reconnected), 'a change after reconnecting').to.equal(true);
    });

    it('gives each concurrent hold on one account a consistent view across instances', async () => {
      const account = await a.createAccount({ name: 'shared', role: 'user' });
      await a.credit({ accountId: account.id, amount: 500n, kind: 'topup', actor: null, note: null });
      const key = await a.createKey({ accountId: account.id, name: null, ...generateApiKey() });
      const hold = (i: number) => ({ requestId: `r${i}`, accountId: account.id, keyId: key.id, amount: 100n, expiresAt: new Date(Date.now() + 60_000) });
      const results = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).holdFunds(hold(i))));
      expect(results.filter((r) => r.ok)).to.have.length(5);
      expect(await b.balance(account.id)).to.deep.equal({ balance: 500n, held: 500n });
    });
  });

  describe('timeouts', () => {
    it('fails a statement stuck on a lock after statement_timeout_ms, and a pool wait after connect_timeout_ms', async () => {
      const store = new PostgresStore(config({ statement_timeout_ms: 300, connect_timeout_ms: 200, pool_size: 1 }));
      const locker = await connected(url);
      try {
        await store.migrate();
        const account = await store.createAccount({ name: 'locked', role: 'user' });
        await store.credit({ accountId: account.id, amount: 100n, kind: 'topup', actor: null, note: null });
        const key = await store.createKey({ accountId: account.id, name: null, ...generateApiKey() });
        await locker.query('BEGIN');
        await locker.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [account.id]);

        const hold = (id: string) => ({ requestId: id, accountId: account.id, keyId: key.id, amount: 10n, expiresAt: new Date(Date.now() + 60_000) });
        const started = Date.now();
        const outcomes = await Promise.allSettled([store.holdFunds(hold('stuck')), store.holdFunds(hold('queued'))]);
        const elapsed = Date.now() - started;
        expect(outcomes.map((o) => o.status)).to.deep.equal(['rejected', 'rejected']);
        const [stuck, queued] = outcomes.map((o) => ((o as PromiseRejectedResult).reason as Error).message);
        expect(stuck).to.match(/statement timeout/);
        expect(queued).to.match(/timeout/);
        expect(elapsed).to.be.below(2_000);

        await locker.query('ROLLBACK');
        expect(await store.holdFunds(hold('after'))).to.deep.equal({ ok: true });
        expect(await store.balance(account.id)).to.deep.equal({ balance: 100n, held: 10n });
      } finally {
        await locker.end();
        await store.close();
        await db!.query(`TRUNCATE ${TABLES}`);
      }
    });
  });

  describe('background errors', () => {
    it('survives the server dropping idle pooled connections, reports it, and answers again', async () => {
      const heard: Error[] = [];
      const store = new PostgresStore(config(), (error) => heard.push(error));
      try {
        await store.migrate();
        await Promise.all([store.ping(), store.ping(), store.ping()]);
        const { rowCount } = await db!.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'tollgate'",
        );
        expect(rowCount).to.be.above(0);
        // Once each one is reported the pool has discarded it, so the next query gets a fresh connection.
        expect(await eventually(() => heard.length === rowCount), 'the pool reported every dropped connection').to.equal(true);
        expect(await store.ping()).to.equal(true);
      } finally {
        await store.close();
      }
    });
  });

  describe('openStore', () => {
    it('opens a postgres:// URL as a working PostgresStore', async () => {
      const store = openStore({ url });
      try {
        expect(store).to.be.instanceOf(PostgresStore);
        await store.migrate();
        expect(await store.ping()).to.equal(true);
      } finally {
        await store.close();
      }
    });
  });
});

describe('store/postgres without a server', () => {
  // Port 1 on loopback: nothing listens there, so connections are refused at once.
  const refused = (): PostgresStore =>
    new PostgresStore({ url: 'postgres://u:secret@127.0.0.1:1/tollgate', connect_timeout_ms: 500, statement_timeout_ms: 500, pool_size: 2 });

  it('answers ping false quickly, and migrate fails without echoing the password', async () => {
    const store = refused();
    try {
      const started = Date.now();
      expect(await store.ping()).to.equal(false);
      expect(Date.now() - started).to.be.below(1_500);
      let caught: unknown;
      try {
        await store.migrate();
      } catch (error) {
        caught = error;
      }
      expect(caught).to.be.instanceOf(Error);
      expect((caught as Error).message).not.to.include('secret');
    } finally {
      await store.close();
    }
  });

  it('changes keysRevision on every call while it cannot listen, so no cache trusts it', async () => {
    const store = refused();
    try {
      const first = store.keysRevision();
      await sleep(50);
      expect(store.keysRevision()).not.to.equal(first);
      expect(store.keysRevision()).not.to.equal(store.keysRevision());
    } finally {
      await store.close();
    }
  });
});
