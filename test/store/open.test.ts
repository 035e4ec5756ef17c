import { expect } from 'chai';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStore } from '../../src/store/open';
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

  it('refuses postgres:// with a one-line message that does not echo the URL', () => {
    for (const url of ['postgres://u:secret@db/tollgate', 'postgresql://u:secret@db/tollgate']) {
      expect(() => openStore({ url })).to.throw(/PostgreSQL store is not available in this build yet/);
      try {
        openStore({ url });
      } catch (error) {
        expect((error as Error).message).not.to.include('secret');
        expect((error as Error).message).not.to.include('\n');
      }
    }
  });

  it('refuses an unknown scheme and an empty sqlite path', () => {
    expect(() => openStore({ url: 'mysql://u:secret@db/x' })).to.throw(/unsupported store scheme "mysql:"/);
    expect(() => openStore({ url: 'sqlite:' })).to.throw(/names no file/);
  });
});
