/**
 * TOTP secrets sealed at rest, on both stores: what the row holds once a secret is stored (read with
 * the database's own client, as anyone with a copy of the file or a database login would), the
 * secret read back by a store opened later, plaintext rows of an older version sealed at migrate,
 * another key refused at start naming the accounts, a missing or malformed key refused naming the
 * variable, and the SQLite key file: made once, 0600, the same key for every process after.
 */
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { newTotpSecret } from '../../src/auth/totp';
import { SECRET_KEY_VARIABLE, SecretKeyError } from '../../src/auth/secret-key';
import { PostgresStore } from '../../src/store/postgres';
import { SqliteStore } from '../../src/store/sqlite';
import { openSqlite } from '../../src/store/sqlite-driver';
import type { Store } from '../../src/store/store';
import { createTestDatabase, postgresProblem, type TestDatabase } from '../helpers/services';
import { TEST_SECRET_KEY } from '../helpers/test-secret-key';

const OTHER_KEY = 'b'.repeat(64);
const BASE32 = /[A-Z2-7]{32}/;

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

/** What each backend needs: a store on the same data with a given environment, and the raw rows. */
interface Backend {
  open(env: NodeJS.ProcessEnv): Store;
  rawSecrets(): Promise<{ account_id: string; secret: string }[]>;
  /** Writes a row as a version before sealing did: the base32 secret itself. */
  writePlaintext(accountId: string, secret: string): Promise<void>;
}

function describeSealing(name: string, backend: () => Backend): void {
  describe(`TOTP secrets at rest: ${name}`, () => {
    const stores: Store[] = [];
    async function opened(env: NodeJS.ProcessEnv = { [SECRET_KEY_VARIABLE]: TEST_SECRET_KEY }): Promise<Store> {
      const store = backend().open(env);
      stores.push(store);
      await store.migrate();
      return store;
    }
    afterEach(async () => {
      for (const store of stores.splice(0)) await store.close();
    });

    it('stores a secret sealed (v1:…, no base32 in the row) and a store opened later reads it back', async () => {
      const store = await opened();
      const account = await store.createAccount({ name: `tess-${Date.now()}`, role: 'user' });
      const secret = newTotpSecret();
      await store.beginSecondFactor(account.id, secret);

      const [row] = (await backend().rawSecrets()).filter((r) => r.account_id === account.id);
      expect(row.secret).to.match(/^v1:[A-Za-z0-9_-]+:[A-Za-z0-9_-]+:[A-Za-z0-9_-]+$/);
      expect(row.secret).not.to.include(secret);
      expect(row.secret).not.to.match(BASE32);

      const later = await opened();
      await later.verifySecretKey();
      expect((await later.getSecondFactor(account.id))?.secret).to.equal(secret);
    });

    it('seals at migrate the plaintext secrets an older version stored, and reads them as before', async () => {
      const store = await opened();
      const account = await store.createAccount({ name: `olga-${Date.now()}`, role: 'user' });
      const secret = newTotpSecret();
      await backend().writePlaintext(account.id, secret);

      const upgraded = await opened();
      const [row] = (await backend().rawSecrets()).filter((r) => r.account_id === account.id);
      expect(row.secret).to.match(/^v1:/).and.not.include(secret);
      await upgraded.verifySecretKey();
      expect((await upgraded.getSecondFactor(account.id))?.secret).to.equal(secret);
    });

    it('refuses, naming the accounts and the way out, a key that is not the one the secrets were sealed with', async () => {
      const store = await opened();
      const name = `wren-${Date.now()}`;
      const account = await store.createAccount({ name, role: 'user' });
      await store.beginSecondFactor(account.id, newTotpSecret());

      const wrong = await opened({ [SECRET_KEY_VARIABLE]: OTHER_KEY });
      const refused = await rejection(wrong.verifySecretKey());
      expect(refused).to.be.instanceOf(SecretKeyError);
      expect(refused.message).to.include(name).and.include(SECRET_KEY_VARIABLE).and.include('tollgate account reset-2fa');
      const read = await rejection(wrong.getSecondFactor(account.id));
      expect(read.message).to.include(account.id).and.include('another key');
    });

    it('refuses a malformed TOLLGATE_SECRET_KEY at migrate, naming the variable and never echoing the value', async () => {
      const value = 'not-a-key-of-32-bytes';
      const refused = await rejection(backend().open({ [SECRET_KEY_VARIABLE]: value }).migrate());
      expect(refused).to.be.instanceOf(SecretKeyError);
      expect(refused.message).to.include(SECRET_KEY_VARIABLE).and.include('32 bytes').and.not.include(value);
    });
  });
}

describe('store: TOTP secrets sealed at rest', function () {
  this.timeout(30_000);

  describe('SQLite', () => {
    let dir: string;
    let file: string;
    before(() => {
      dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-sealed-'));
      file = path.join(dir, 'data', 'tollgate.db');
    });
    after(() => rmSync(dir, { recursive: true, force: true }));

    describeSealing('SQLite', () => ({
      open: (env) => new SqliteStore(file, env),
      async rawSecrets() {
        const db = openSqlite(file, { readonly: true });
        try {
          return db.prepare<[], { account_id: string; secret: string }>('SELECT account_id, secret FROM second_factors').all();
        } finally {
          db.close();
        }
      },
      async writePlaintext(accountId, secret) {
        const db = openSqlite(file);
        try {
          db.prepare('INSERT INTO second_factors (account_id, secret, created_at) VALUES (?, ?, ?)').run(accountId, secret, Date.now());
        } finally {
          db.close();
        }
      },
    }));

    it('without TOLLGATE_SECRET_KEY, makes one key file beside the database (0600) that every later store reads', async () => {
      const own = path.join(dir, 'keyfile', 'tollgate.db');
      const first = new SqliteStore(own, {});
      const second = new SqliteStore(own, {});
      try {
        await first.migrate();
        const keyFile = `${own}.secret-key`;
        expect(first.secretKey).to.include({ file: keyFile, generated: true });
        expect(statSync(keyFile).mode & 0o777).to.equal(0o600);
        const account = await first.createAccount({ name: 'kai', role: 'user' });
        const secret = newTotpSecret();
        await first.beginSecondFactor(account.id, secret);

        await second.migrate();
        expect(second.secretKey).to.include({ file: keyFile, generated: false });
        expect((await second.getSecondFactor(account.id))?.secret).to.equal(secret);
        // The file holds the key in TOLLGATE_SECRET_KEY's own form, so it can be moved there.
        const moved = new SqliteStore(own, { [SECRET_KEY_VARIABLE]: readFileSync(keyFile, 'utf8') });
        try {
          await moved.migrate();
          await moved.verifySecretKey();
          expect(moved.secretKey.file).to.equal(null);
        } finally {
          await moved.close();
        }
      } finally {
        await second.close();
        await first.close();
      }
    });
  });

  describe('PostgreSQL', () => {
    let database: TestDatabase | null = null;
    before(async function () {
      const problem = await postgresProblem();
      if (problem !== null) {
        console.log(`      ${problem}: the PostgreSQL run skipped`);
        this.skip();
      }
      database = await createTestDatabase();
    });
    after(async () => database?.drop());

    const config = () => ({ url: database!.url, connect_timeout_ms: 2000, statement_timeout_ms: 5000, pool_size: 2 });
    async function query<T extends object>(sql: string, params: unknown[] = []): Promise<T[]> {
      const client = new Client({ connectionString: database!.url });
      await client.connect();
      try {
        return (await client.query<T>(sql, params)).rows;
      } finally {
        await client.end();
      }
    }

    describeSealing('PostgreSQL', () => ({
      open: (env) => new PostgresStore(config(), undefined, env),
      rawSecrets: () => query<{ account_id: string; secret: string }>('SELECT account_id, secret FROM second_factors'),
      async writePlaintext(accountId, secret) {
        await query('INSERT INTO second_factors (account_id, secret, created_at) VALUES ($1, $2, now())', [accountId, secret]);
      },
    }));
  });

  it('refuses a PostgreSQL store without TOLLGATE_SECRET_KEY before connecting, naming the variable and the fix', async () => {
    // Port 1: were it to connect first, the error would be a refused connection instead.
    const store = new PostgresStore({ url: 'postgres://u:pw@127.0.0.1:1/tollgate', connect_timeout_ms: 500, statement_timeout_ms: 500, pool_size: 1 }, undefined, {});
    try {
      const refused = await rejection(store.migrate());
      expect(refused).to.be.instanceOf(SecretKeyError);
      expect(refused.message).to.include(`${SECRET_KEY_VARIABLE} is not set`).and.include('every instance').and.include('openssl rand -base64 32');
    } finally {
      await store.close();
    }
  });
});
