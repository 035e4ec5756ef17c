import { expect } from 'chai';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { SqliteStore } from '../../src/store/sqlite';
import { checkpointInBackground } from '../../src/store/sqlite-checkpoints';
import { captureLogger } from '../helpers/capture-logger';

/** Resolves once `check` holds, polling; fails after `ms` (a wide bound: the machine may be loaded). */
async function eventually(check: () => boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('the condition never held');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('store/sqlite-checkpoints: WAL checkpoints on a thread of their own', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-checkpoints-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("copies the WAL into the database file while the store's own commits no longer do", async () => {
    const file = path.join(dir, 'tollgate.db');
    const store = new SqliteStore(file);
    await store.migrate();
    const checkpoints = checkpointInBackground(store, pino({ level: 'silent' }), 20);
    try {
      const before = statSync(file).size;
      for (let i = 0; i < 100; i++) await store.createAccount({ name: `account ${i} ${'x'.repeat(200)}`, role: 'user' });
      // Far below SQLite's own threshold of 1,000 pages: only the thread's checkpoints grow the file.
      await eventually(() => statSync(file).size > before);
    } finally {
      await checkpoints.stop();
      await store.close();
    }
  });

  it('hands the checkpoints over while running and gives them back when stopped', async () => {
    const calls: boolean[] = [];
    const connection = { filename: path.join(dir, 'tollgate.db'), autoCheckpoint: (on: boolean) => calls.push(on) };
    const store = new SqliteStore(connection.filename);
    try {
      const checkpoints = checkpointInBackground(connection, pino({ level: 'silent' }), 20);
      expect(calls).to.deep.equal([false]);
      await checkpoints.stop();
      expect(calls).to.deep.equal([false, true]);
    } finally {
      await store.close();
    }
  });

  it('gives the checkpoints back to the connection, saying so, when the thread cannot open the file', async () => {
    const lines: string[] = [];
    const calls: boolean[] = [];
    const connection = { filename: path.join(dir, 'no such folder', 'tollgate.db'), autoCheckpoint: (on: boolean) => calls.push(on) };
    const checkpoints = checkpointInBackground(connection, captureLogger('warn', lines), 20);
    await eventually(() => calls.length === 2);
    expect(calls).to.deep.equal([false, true]);
    expect(lines.join('\n')).to.include('the WAL checkpoint thread failed');
    await checkpoints.stop();
  });
});
