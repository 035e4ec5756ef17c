import { expect } from 'chai';
import { openSqlite } from '../../src/store/sqlite-driver';
import { isRefusedRecord } from '../../src/store/set-aside';

/** The error `sql` throws on a fresh in-memory database with one table and foreign keys on. */
function sqliteError(sql: string): unknown {
  const db = openSqlite(':memory:');
  try {
    db.exec('PRAGMA foreign_keys = ON');
    db.exec('CREATE TABLE parent (id TEXT PRIMARY KEY)');
    db.exec('CREATE TABLE child (id TEXT PRIMARY KEY, parent TEXT NOT NULL REFERENCES parent(id), n INTEGER CHECK (n >= 0))');
    db.exec("INSERT INTO parent (id) VALUES ('p')");
    db.exec(sql);
  } catch (error) {
    return error;
  } finally {
    db.close();
  }
  throw new Error(`${sql} did not fail`);
}

describe('store/set-aside: which store errors refuse the records themselves', () => {
  it("reads this Node's SQLite binding: broken constraints are refusals, a syntax error is not", () => {
    expect(isRefusedRecord(sqliteError("INSERT INTO child (id, parent) VALUES ('c', 'nobody')")), 'foreign key').to.equal(true);
    expect(isRefusedRecord(sqliteError("INSERT INTO child (id, parent, n) VALUES ('c', 'p', -1)")), 'check').to.equal(true);
    expect(isRefusedRecord(sqliteError("INSERT INTO child (id) VALUES ('c')")), 'not null').to.equal(true);
    expect(isRefusedRecord(sqliteError('INSERT INTO nowhere VALUES (1)')), 'no such table').to.equal(false);
  });

  it('reads both SQLite bindings, whichever this Node loads', () => {
    // better-sqlite3 names the code; node:sqlite numbers it (SQLITE_CONSTRAINT_FOREIGNKEY is 787, BUSY 5).
    expect(isRefusedRecord(Object.assign(new Error('x'), { code: 'SQLITE_CONSTRAINT_FOREIGNKEY' }))).to.equal(true);
    expect(isRefusedRecord(Object.assign(new Error('x'), { code: 'ERR_SQLITE_ERROR', errcode: 787 }))).to.equal(true);
    expect(isRefusedRecord(Object.assign(new Error('x'), { code: 'SQLITE_BUSY' }))).to.equal(false);
    expect(isRefusedRecord(Object.assign(new Error('x'), { code: 'ERR_SQLITE_ERROR', errcode: 5 }))).to.equal(false);
  });

  it('reads PostgreSQL classes 22 and 23 as refusals, and neither a lost connection nor a bare error', () => {
    expect(isRefusedRecord(Object.assign(new Error('x'), { code: '22003' }))).to.equal(true);
    expect(isRefusedRecord(Object.assign(new Error('x'), { code: '23503' }))).to.equal(true);
    expect(isRefusedRecord(Object.assign(new Error('x'), { code: '40001' }))).to.equal(false);
    expect(isRefusedRecord(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).to.equal(false);
    expect(isRefusedRecord(new Error('x'))).to.equal(false);
    expect(isRefusedRecord(new RangeError('out of range'))).to.equal(true);
  });
});
