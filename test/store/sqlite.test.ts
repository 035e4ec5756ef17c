import { expectedVersions } from './migration-numbers';
import { expect } from 'chai';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSqlite } from '../../src/store/sqlite-driver';
import { generateApiKey } from '../../src/auth/keys';
import { SQLITE_MIGRATIONS, applySqliteMigrations } from '../../src/store/migrations/sqlite';
import { SqliteStore } from '../../src/store/sqlite';
import { useMemoryStore } from '../helpers/memory-store';
import type { Account, NewKey } from '../../src/store/store';

/** A NewKey for `account` with a fresh random key. */
function newKey(account: Account, extra: Partial<NewKey> = {}): NewKey {
  const { hash, prefix, last4 } = generateApiKey();
  return { accountId: account.id, name: 'test', hash, prefix, last4, ...extra };
}

/**
 * Two migrated connections to one fresh file, as the server and another process (the CLI, a worker)
 * hold it; both closed and the file removed after `use`.
 */
async function withTwoConnections(use: (served: SqliteStore, other: SqliteStore) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-sqlite-'));
  const file = path.join(dir, 'tollgate.db');
  const served = new SqliteStore(file);
  const other = new SqliteStore(file);
  try {
    await served.migrate();
    await other.migrate();
    await use(served, other);
  } finally {
    await other.close();
    await served.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('store/sqlite', () => {
  const memoryStore = useMemoryStore();
  let store: SqliteStore;
  beforeEach(() => {
    store = memoryStore();
  });

  describe('migrate', () => {
    it('numbers the migrations 1, 2, 3 … in order', () => {
      expect(SQLITE_MIGRATIONS.map((migration) => migration.version)).to.deep.equal(expectedVersions(SQLITE_MIGRATIONS));
    });

    it('is idempotent: a second run applies nothing and keeps the data', async () => {
      await store.createAccount({ name: 'alice', role: 'user' });
      await store.migrate();
      await store.migrate();
      expect(await store.countAccounts()).to.equal(1);
    });

    it('records each version once in schema_migrations', () => {
      const db = openSqlite(':memory:');
      try {
        expect(applySqliteMigrations(db)).to.equal(SQLITE_MIGRATIONS.length);
        expect(applySqliteMigrations(db)).to.equal(0);
        const versions = db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all();
        expect(versions).to.deep.equal(SQLITE_MIGRATIONS.map((m) => m.version));
      } finally {
        db.close();
      }
    });

    it('applies only the new entry when a migration is appended', () => {
      const db = openSqlite(':memory:');
      try {
        applySqliteMigrations(db);
        const next = SQLITE_MIGRATIONS[SQLITE_MIGRATIONS.length - 1].version + 1;
        const extended = [...SQLITE_MIGRATIONS, { version: next, description: 'test', sql: 'CREATE TABLE t (x INTEGER)' }];
        expect(applySqliteMigrations(db, extended)).to.equal(1);
        expect(applySqliteMigrations(db, extended)).to.equal(0);
      } finally {
        db.close();
      }
    });

    it('rolls back a failing migration and leaves it pending', () => {
      const db = openSqlite(':memory:');
      try {
        applySqliteMigrations(db);
        const next = SQLITE_MIGRATIONS[SQLITE_MIGRATIONS.length - 1].version + 1;
        const broken = [...SQLITE_MIGRATIONS, { version: next, description: 'bad', sql: 'CREATE TABLE t (x); NOT SQL' }];
        expect(() => applySqliteMigrations(db, broken)).to.throw();
        expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 't'").pluck().get()).to.equal(0);
        expect(db.prepare('SELECT max(version) FROM schema_migrations').pluck().get()).to.equal(next - 1);
      } finally {
        db.close();
      }
    });

    it('refuses a store whose schema is newer than this build', () => {
      const db = openSqlite(':memory:');
      try {
        applySqliteMigrations(db);
        db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (999, 0)').run();
        expect(() => applySqliteMigrations(db)).to.throw(/newer than this build/);
      } finally {
        db.close();
      }
    });
  });

  describe('keysRevision', () => {
    it('changes on this connection\'s own key and account writes', async () => {
      const r0 = store.keysRevision();
      const account = await store.createAccount({ name: 'alice', role: 'user' });
      const r1 = store.keysRevision();
      const key = await store.createKey(newKey(account));
      const r2 = store.keysRevision();
      await store.revokeKey(key.id);
      const r3 = store.keysRevision();
      expect(new Set([r0, r1, r2, r3]).size).to.equal(4);
      expect(store.keysRevision()).to.equal(r3);
    });
  });

  describe('on a file shared by two connections', () => {
    let dir: string;

    beforeEach(() => {
      dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-sqlite-'));
    });

    afterEach(() => {
      rmSync(dir, { recursive: true, force: true });
    });

    it('creates the parent folder and uses WAL', async () => {
      const file = path.join(dir, 'nested', 'deeper', 'tollgate.db');
      const fileStore = new SqliteStore(file);
      try {
        await fileStore.migrate();
        expect(existsSync(file)).to.equal(true);
        expect(await fileStore.ping()).to.equal(true);
      } finally {
        await fileStore.close();
      }
      const db = openSqlite(file, { readonly: true });
      try {
        expect(db.prepare('PRAGMA journal_mode').pluck().get()).to.equal('wal');
      } finally {
        db.close();
      }
    });

    it('changes keysRevision when the other connection revokes a key', () =>
      withTwoConnections(async (server, cli) => {
        const account = await server.createAccount({ name: 'alice', role: 'user' });
        const input = newKey(account);
        const key = await server.createKey(input);
        const before = server.keysRevision();
        expect(server.keysRevision()).to.equal(before);

        expect(await cli.revokeKey(key.id)).to.equal(true);

        expect(server.keysRevision()).not.to.equal(before);
        expect((await server.findKeyByHash(input.hash))!.key.revokedAt).to.be.instanceOf(Date);
      }));
  });

  describe("revisions as of this event-loop turn ('turn')", () => {
    const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

    it("sees another connection's revocation from the next turn, its own at once, and 'now' always", () =>
      withTwoConnections(async (server, cli) => {
        const account = await server.createAccount({ name: 'alice', role: 'user' });
        const first = await server.createKey(newKey(account));
        const second = await server.createKey(newKey(account));
        await nextTurn();

        const before = server.keysRevision('turn');
        expect(await cli.revokeKey(first.id)).to.equal(true);
        // The file's version was read once this turn: the other connection's commit waits for the next.
        expect(server.keysRevision('turn')).to.equal(before);
        await nextTurn();
        const seen = server.keysRevision('turn');
        expect(seen).not.to.equal(before);

        // This connection's own change moves it at once, whatever the turn.
        expect(await server.revokeKey(second.id)).to.equal(true);
        expect(server.keysRevision('turn')).not.to.equal(seen);

        // An exact read never waits for a turn.
        const exact = server.keysRevision();
        expect(await cli.setAccountDisabled(account.id, true)).to.equal(true);
        expect(server.keysRevision()).not.to.equal(exact);
      }));

    it("sees another connection's credit in the funds revision from the next turn, and at once with 'now'", () =>
      withTwoConnections(async (server, cli) => {
        const account = await server.createAccount({ name: 'bob', role: 'user' });
        await nextTurn();
        const before = server.fundsRevision('turn');
        const exactBefore = server.fundsRevision();
        await cli.credit({ accountId: account.id, amount: 5n, kind: 'admin', actor: 'cli', note: null });
        expect(server.fundsRevision('turn')).to.equal(before);
        expect(server.fundsRevision()).not.to.equal(exactBefore);
        await nextTurn();
        expect(server.fundsRevision('turn')).not.to.equal(before);
      }));
    it("takes an exact read's newer version for the rest of the turn", () =>
      withTwoConnections(async (server, cli) => {
        const account = await server.createAccount({ name: 'carol', role: 'user' });
        await nextTurn();
        const before = server.fundsRevision('turn');
        await cli.credit({ accountId: account.id, amount: 5n, kind: 'admin', actor: 'cli', note: null });
        expect(server.fundsRevision('turn')).to.equal(before);
        // The hold's exact read sees the credit, and so does every 'turn' read after it in this turn.
        const exact = server.fundsRevision();
        expect(exact).not.to.equal(before);
        expect(server.fundsRevision('turn')).to.equal(exact);
        await nextTurn();
        expect(server.fundsRevision('turn')).to.equal(exact);
      }));
  });

  describe('keysRevision on a file that workers share', () => {
    it('stays put while another connection holds and charges, and moves when it changes a key or an account', () =>
      withTwoConnections(async (worker, other) => {
        const account = await worker.createAccount({ name: 'alice', role: 'user' });
        const key = await worker.createKey(newKey(account));
        await worker.credit({ accountId: account.id, amount: 1_000_000n, kind: 'admin', actor: null, note: null });
        const before = worker.keysRevision();

        // What another worker writes on every paid request: a hold, then its release.
        const hold = { requestId: 'req_1', accountId: account.id, keyId: key.id, amount: 1000n, expiresAt: new Date(Date.now() + 60_000) };
        expect(await other.holdFunds(hold)).to.deep.equal({ ok: true });
        expect(await other.releaseHolds(['req_1'])).to.equal(1);
        expect(worker.keysRevision()).to.equal(before);

        expect(await other.setKeyLimits(key.id, { rateLimits: { rpm: 3 } })).to.equal(true);
        const afterLimits = worker.keysRevision();
        expect(afterLimits).not.to.equal(before);
        expect(await other.setAccountDisabled(account.id, true)).to.equal(true);
        expect(worker.keysRevision()).not.to.equal(afterLimits);
      }));
  });

  describe('ping and close', () => {
    it('answers ping until closed, and closing twice is fine', async () => {
      expect(await store.ping()).to.equal(true);
      await store.close();
      expect(await store.ping()).to.equal(false);
      await store.close();
    });
  });
});
