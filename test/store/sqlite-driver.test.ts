import { expect } from 'chai';
import { openSqlite, SQLITE_DRIVER, sqliteErrorCode, type SqliteDatabase } from '../../src/store/sqlite-driver';

describe('sqlite-driver', () => {
  let db: SqliteDatabase;

  beforeEach(() => {
    db = openSqlite(':memory:');
    db.exec('CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER, h BLOB)');
  });

  afterEach(() => db.close());

  it('uses node:sqlite where Node has it unflagged (22.13 and later) and better-sqlite3 on Node 20', () => {
    const [major, minor] = process.versions.node.split('.').map(Number);
    const builtIn = major > 22 || (major === 22 && minor >= 13);
    expect(SQLITE_DRIVER).to.equal(builtIn ? 'node:sqlite' : 'better-sqlite3');
  });

  it('binds named parameters from a whole row, ignoring fields the statement does not use', () => {
    db.prepare<[Record<string, unknown>]>('INSERT INTO t (id, n) VALUES (@id, @n)').run({ id: 'a', n: 2, unused: 'x' });
    expect(db.prepare<[string], { id: string; n: number }>('SELECT id, n FROM t WHERE id = ?').get('a')).to.deep.include({ id: 'a', n: 2 });
  });

  it('plucks the first column, reads bigints written as text exactly, and gives undefined for no row', () => {
    db.prepare<[string, bigint]>('INSERT INTO t (id, n) VALUES (?, ?)').run('big', 9007199254740993n);
    expect(db.prepare<[string], string>('SELECT CAST(n AS TEXT) FROM t WHERE id = ?').pluck().get('big')).to.equal('9007199254740993');
    expect(db.prepare<[string], string>('SELECT id FROM t WHERE id = ?').pluck().get('none')).to.equal(undefined);
  });

  it('gives blobs back as Buffers', () => {
    db.prepare<[string, Buffer]>('INSERT INTO t (id, h) VALUES (?, ?)').run('b', Buffer.from('hash'));
    const hash = db.prepare<[string], Buffer>('SELECT h FROM t WHERE id = ?').pluck().get('b');
    expect(Buffer.isBuffer(hash)).to.equal(true);
    expect(hash?.toString()).to.equal('hash');
  });

  it('counts changed rows as a number', () => {
    db.prepare('INSERT INTO t (id) VALUES (?)').run('c');
    const result = db.prepare<[string]>('UPDATE t SET n = 1 WHERE id = ?').run('c');
    expect(result.changes).to.equal(1);
  });

  it('names constraint failures as better-sqlite3 does', () => {
    const insert = db.prepare<[string]>('INSERT INTO t (id) VALUES (?)');
    insert.run('dup');
    const error = (() => {
      try {
        insert.run('dup');
        return null;
      } catch (thrown) {
        return thrown;
      }
    })();
    expect(sqliteErrorCode(error)).to.equal('SQLITE_CONSTRAINT_PRIMARYKEY');
    expect(sqliteErrorCode(new Error('not from SQLite'))).to.equal(null);
  });

  it('commits a transaction, rolls one back on a throw, and nests through savepoints', () => {
    const insert = db.prepare<[string]>('INSERT INTO t (id) VALUES (?)');
    const count = db.prepare<[], number>('SELECT count(*) FROM t').pluck();
    db.transaction(() => insert.run('one')).immediate();
    expect(() =>
      db.transaction(() => {
        insert.run('two');
        throw new Error('abandon');
      })(),
    ).to.throw('abandon');
    expect(count.get()).to.equal(1);
    db.transaction(() => {
      insert.run('outer');
      expect(() => db.transaction(() => (insert.run('inner'), insert.run('one')))()).to.throw();
    }).immediate();
    expect(db.prepare<[], string>('SELECT id FROM t ORDER BY id').pluck().all()).to.deep.equal(['one', 'outer']);
  });

  it('reports whether it is open, and closing twice is harmless', () => {
    expect(db.open).to.equal(true);
    db.close();
    expect(db.open).to.equal(false);
    db.close();
  });
});
