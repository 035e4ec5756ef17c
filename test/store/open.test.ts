import { expect } from 'chai';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStore } from '../../src/store/open';
import { PostgresStore } from '../../src/store/postgres';
import '../helpers/test-secret-key';
import { SqliteStore } from '../../src/store/sqlite';

describe('store/open', () => {
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-open-'));
  });

  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('opens sqlite::memory: in memory', async () => {
    const store = openStore({ url: 'sqlite::memory:' }, dir);
    try {
      expect(store).to.be.instanceOf(SqliteStore);
      expect((store as SqliteStore).filename).to.equal(':memory:');
      await store.migrate();
      expect(await store.countAccounts()).to.equal(0);
    } finally {
      await store.close();
    }
  });

  it('resolves a relative sqlite path against the base folder', async () => {
    const store = openStore({ url: 'sqlite:data/tollgate.db' }, dir);
    try {
      await store.migrate();
      expect(existsSync(path.join(dir, 'data', 'tollgate.db'))).to.equal(true);
    } finally {
      await store.close();
    }
  });

  it('keeps an absolute sqlite path as it is', async () => {
    const file = path.join(dir, 'abs.db');
    const store = openStore({ url: `sqlite:${file}` }, '/nowhere');
    try {
      expect((store as SqliteStore).filename).to.equal(file);
    } finally {
      await store.close();
    }
  });

  it('opens postgres:// and postgresql:// as a PostgresStore with the configured limits, without connecting', async () => {
    const configured = openStore({ url: 'postgres://u:secret@db/tollgate', connect_timeout_ms: 100, statement_timeout_ms: 200, pool_size: 3 });
    const defaulted = openStore({ url: 'postgresql://u:secret@db/tollgate' });
    try {
      expect(configured).to.be.instanceOf(PostgresStore);
      expect((configured as PostgresStore).limits).to.deep.equal({ connect_timeout_ms: 100, statement_timeout_ms: 200, pool_size: 3 });
      expect(defaulted).to.be.instanceOf(PostgresStore);
      expect((defaulted as PostgresStore).limits).to.deep.equal({ connect_timeout_ms: 2000, statement_timeout_ms: 5000, pool_size: 10 });
    } finally {
      await configured.close();
      await defaulted.close();
    }
  });

  it('reports an unreachable PostgreSQL on migrate without echoing the URL', async () => {
    // Port 1 on loopback: nothing listens there, so the connection is refused at once.
    const store = openStore({ url: 'postgres://u:secret@127.0.0.1:1/tollgate', connect_timeout_ms: 500 });
    try {
      let caught: unknown;
      try {
        await store.migrate();
      } catch (error) {
        caught = error;
      }
      expect(caught).to.be.instanceOf(Error);
      expect((caught as Error).message).not.to.include('secret');
      expect(await store.ping()).to.equal(false);
    } finally {
      await store.close();
    }
  });

  it('refuses an unknown scheme and an empty sqlite path', () => {
    expect(() => openStore({ url: 'mysql://u:secret@db/x' })).to.throw(/unsupported store scheme "mysql:"/);
    expect(() => openStore({ url: 'sqlite:' })).to.throw(/names no file/);
  });
});
