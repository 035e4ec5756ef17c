import { expect } from 'chai';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { generateApiKey } from '../../src/auth/keys';
import { SqliteStore } from '../../src/store/sqlite';
import { isRefusedRecord } from '../../src/store/set-aside';
import { writeInBackground, type ChargeBatchWriter } from '../../src/store/sqlite-background-writes';
import type { ApiKeyRecord, ChargeRecord } from '../../src/store/store';
import { rejection } from '../helpers/async';
import { startBlockMeter } from '../helpers/block-meter';
import { captureLogger } from '../helpers/capture-logger';
import { chargeOf as charge } from '../helpers/charges';

/** Resolves once `check` holds, polling; fails after `ms` (a wide bound: the machine may be loaded). */
async function eventually(check: () => boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('the condition never held');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

let nextRequest = 0;

function chargeOf(key: ApiKeyRecord, cost: bigint, extra: Partial<ChargeRecord> = {}): ChargeRecord {
  nextRequest += 1;
  return charge(key, `req_background_${nextRequest}`, cost, extra);
}

/** A connection stub that records what is handed over and given back. */
function stubConnection(filename: string) {
  const checkpoints: boolean[] = [];
  const writers: (ChargeBatchWriter | null)[] = [];
  return {
    checkpoints,
    writers,
    connection: { filename, autoCheckpoint: (on: boolean) => checkpoints.push(on), writeChargesWith: (writer: ChargeBatchWriter | null) => writers.push(writer) },
  };
}

describe('store/sqlite-background-writes: ledger batches and WAL checkpoints on a thread of their own', () => {
  let dir: string;
  let store: SqliteStore;
  let key: ApiKeyRecord;

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-background-writes-'));
    store = new SqliteStore(path.join(dir, 'tollgate.db'));
    await store.migrate();
    const account = await store.createAccount({ name: 'writer', role: 'user' });
    await store.credit({ accountId: account.id, amount: 1_000_000_000n, kind: 'topup', actor: 'test', note: null });
    const { hash, prefix, last4 } = generateApiKey();
    key = await store.createKey({ accountId: account.id, name: 'k', hash, prefix, last4 });
  });

  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("copies the WAL into the database file while the store's own commits no longer do", async () => {
    const writes = writeInBackground(store, pino({ level: 'silent' }), 20);
    try {
      const before = statSync(store.filename).size;
      for (let i = 0; i < 100; i++) await store.createAccount({ name: `account ${i} ${'x'.repeat(200)}`, role: 'user' });
      // Far below SQLite's own threshold of 1,000 pages: only the thread's checkpoints grow the file.
      await eventually(() => statSync(store.filename).size > before);
    } finally {
      await writes.stop();
    }
  });

  it("writes each batch on the thread's connection, by the store's own rules", async () => {
    const writes = writeInBackground(store, pino({ level: 'silent' }), 1000);
    try {
      const revision = store.fundsRevision('now');
      const charges = [chargeOf(key, 300n), chargeOf(key, 400n)];
      expect(await store.recordCharges(charges)).to.equal(2);
      // data_version moves only for another connection's commit: this one wrote nothing.
      expect(store.fundsRevision('now')).to.not.equal(revision);
      expect((await store.balance(key.accountId)).balance).to.equal(1_000_000_000n - 700n);
      expect((await store.listCharges({ accountId: key.accountId })).map((charge) => charge.cost).sort()).to.deep.equal([300n, 400n]);
      // A batch the store already holds is a no-op there too.
      expect(await store.recordCharges(charges)).to.equal(0);
      expect((await store.balance(key.accountId)).balance).to.equal(1_000_000_000n - 700n);
    } finally {
      await writes.stop();
    }
  });

  it('brings a refused record back as a refusal, so the ledger writer can set it aside', async () => {
    const writes = writeInBackground(store, pino({ level: 'silent' }), 1000);
    try {
      const unknownAccount = await rejection(store.recordCharges([chargeOf(key, 5n, { accountId: 'acc_0000000000000000' })]));
      expect(isRefusedRecord(unknownAccount), String(unknownAccount)).to.equal(true);
      const outOfRange = await rejection(store.recordCharges([chargeOf(key, 2n ** 64n)]));
      // better-sqlite3 throws a RangeError for a bigint past 64 bits, node:sqlite a TypeError: either crosses over as itself.
      expect(outOfRange).to.be.instanceOf(Error).and.to.satisfy((error: Error) => error instanceof RangeError || error instanceof TypeError);
      expect(isRefusedRecord(outOfRange)).to.equal(true);
      // Neither moved the balance.
      expect((await store.balance(key.accountId)).balance).to.equal(1_000_000_000n);
    } finally {
      await writes.stop();
    }
  });

  it('answers every batch sent before stop, then gives the writes back to the connection', async () => {
    const writes = writeInBackground(store, pino({ level: 'silent' }), 1000);
    const sent = [store.recordCharges([chargeOf(key, 1n)]), store.recordCharges([chargeOf(key, 2n), chargeOf(key, 3n)])];
    await writes.stop();
    expect(await Promise.all(sent)).to.deep.equal([1, 2]);
    const revision = store.fundsRevision('now');
    expect(await store.recordCharges([chargeOf(key, 4n)])).to.equal(1);
    // Written on the store's own connection now: data_version did not move.
    expect(store.fundsRevision('now')).to.equal(revision);
    expect((await store.balance(key.accountId)).balance).to.equal(1_000_000_000n - 10n);
  });

  it("keeps a large batch's statements and commit off the request thread", async function () {
    if (process.platform !== 'linux') this.skip();
    const batch = (n: number) => Array.from({ length: n }, () => chargeOf(key, 1n));
    const meter = startBlockMeter();
    try {
      await store.recordCharges(batch(4000));
      await new Promise((resolve) => setTimeout(resolve, 20));
      const inline = meter.read().maxCpuMs;
      const writes = writeInBackground(store, pino({ level: 'silent' }), 1000);
      try {
        meter.reset();
        expect(await store.recordCharges(batch(4000))).to.equal(4000);
        await new Promise((resolve) => setTimeout(resolve, 20));
        const background = meter.read().maxCpuMs;
        // CPU time, which a loaded machine does not stretch: the clone costs about a third of the write
        // (here 23 against 64 ms); written inline, the two would be alike.
        expect(background, `inline ${inline.toFixed(1)} ms, background ${background.toFixed(1)} ms`).to.be.below(inline * 0.7);
      } finally {
        await writes.stop();
      }
    } finally {
      meter.stop();
    }
  });

  it('hands the checkpoints and the batches over while running and gives them back when stopped', async () => {
    const { checkpoints, writers, connection } = stubConnection(store.filename);
    const writes = writeInBackground(connection, pino({ level: 'silent' }), 20);
    expect(checkpoints).to.deep.equal([false]);
    expect(writers).to.have.length(1);
    expect(writers[0]).to.be.a('function');
    await writes.stop();
    expect(checkpoints).to.deep.equal([false, true]);
    expect(writers).to.have.length(2);
    expect(writers[1]).to.equal(null);
  });

  it('gives the writes back to the connection, saying so, when the thread cannot open the file', async () => {
    const lines: string[] = [];
    const { checkpoints, writers, connection } = stubConnection(path.join(dir, 'no such folder', 'tollgate.db'));
    const writes = writeInBackground(connection, captureLogger('warn', lines), 20);
    // A batch sent before the thread failed is rejected as a store failure, which the ledger writer retries.
    const sent = writers[0]!([chargeOf(key, 1n)]);
    const failed = await rejection(sent);
    expect(isRefusedRecord(failed)).to.equal(false);
    expect(String(failed)).to.include('writing thread stopped');
    await eventually(() => checkpoints.length === 2);
    expect(checkpoints).to.deep.equal([false, true]);
    expect(writers[1]).to.equal(null);
    expect(lines.join('\n')).to.include("the store's writing thread failed");
    await writes.stop();
  });
});
