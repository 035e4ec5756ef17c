/**
 * The outbox on its own and behind the ledger writer: records come back whole (bigints and Dates
 * included) after a restart, drained ones are not replayed, a torn or damaged record is skipped with
 * an error line naming its offset, a second process is kept out, a replay into a store that already
 * has a charge is a counted no-op, and a failing disk is reported until it works again.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { LedgerWriter } from '../../src/billing/ledger-writer';
import { Outbox } from '../../src/outbox/outbox';
import { acquireOutbox, releaseOutbox } from '../../src/outbox/shared-outboxes';
import { encodeRecord } from '../../src/outbox/record-encoder';
import { readRecords } from '../../src/outbox/record-reader';
import { scanOutboxes } from '../../src/outbox/scan';
import type { ChargeRecord } from '../../src/store/store';
import { SqliteStore } from '../../src/store/sqlite';
import { captureLogger } from '../helpers/capture-logger';
import { PLAIN_CHARGE } from '../helpers/charges';

const silent = pino({ level: 'silent' });

function segments(dir: string): string[] {
  return readdirSync(dir).filter((name) => name.endsWith('.log')).sort();
}

describe('outbox', () => {
  let dir: string;
  const open: Outbox[] = [];

  function openOutbox(logger = silent): Outbox {
    const outbox = Outbox.open(dir, { syncMs: 5, logger });
    open.push(outbox);
    return outbox;
  }

  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'tollgate-outbox-'));
  });

  afterEach(async () => {
    for (const outbox of open.splice(0)) await outbox.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const row = (id: string) => ({ requestId: id, cost: 123_456_789_012_345_678_901n, createdAt: new Date(1_700_000_000_123), nested: { held: -5n, note: 'ü "quoted"' } });

  it('encodes a row whole: bigints, Dates and nested values come back as they were', () => {
    const record = { kind: 'charge', id: 'r1', instance: 'i1', row: row('r1') };
    const [read] = [...readRecords(encodeRecord(record))];
    expect(read.ok).to.equal(true);
    expect(read.ok && read.record).to.deep.equal(record);
  });

  /** A charge with every column filled, some at their edges. */
  function fullCharge(id: string, prices: ChargeRecord['prices']): ChargeRecord {
    return {
      requestId: id, clientRequestId: 'client-ü-1', accountId: 'acc_1', keyId: 'key_1', model: 'claude-sonnet-5', provider: 'anthropic',
      endpoint: 'anthropic-messages', inputTokens: 1523, cacheWriteTokens: 7, cacheWrite1hTokens: 3, cacheReadTokens: 12_800, outputTokens: 412,
      imageInputTokens: 9, imageOutputTokens: 4160, images: 2,
      toolCalls: { web_search: 2 }, cost: 10_617_000n, held: 48_000_000n, overage: -1n, unbilled: 2n ** 70n, prices, usageSource: 'upstream',
      status: 200, outcome: 'delivered', latencyMs: 812.4375, createdAt: new Date(1_700_000_000_123), serviceTier: null, longContext: true,
      sessionId: 's'.repeat(300), requestedModel: null, servedModel: 'claude-sonnet-5-20260101', attempts: [{ provider: 'anthropic', outcome: 'ok', ms: 800 }],
      ttfbMs: null, userAgent: undefined, origin: 'playground',
    };
  }

  it('keeps a charge compact: every column back as it was, its price snapshot written once per segment', async () => {
    const prices = { tokens: { inputTokens: '3000000000', cacheWriteTokens: '3750000000', cacheWrite1hTokens: '6000000000', cacheReadTokens: '300000000', outputTokens: '15000000000', imageInputTokens: '0', imageOutputTokens: '0' }, tool_calls: { web_search: '10000000' } };
    const first = openOutbox();
    const charges = [fullCharge('c1', prices), fullCharge('c2', prices), { ...fullCharge('c3', null), ttfbMs: 12.5, userAgent: 'curl/8' }];
    const entries = charges.map((charge) => first.appendCharge(charge, 'instance-1'));
    expect(entries[1].bytes, 'no key names, no price snapshot').to.be.below(encodeRecord({ kind: 'charge', id: 'c2', instance: 'instance-1', row: charges[1] }).length / 2);
    await first.close();
    const [file] = segments(dir);
    const records = [...readRecords(readFileSync(path.join(dir, file)))];
    expect(records.every((read) => read.ok)).to.equal(true);
    expect(readFileSync(path.join(dir, file)).toString('latin1').split('15000000000').length - 1, 'the snapshot, once').to.equal(1);

    const second = openOutbox();
    const replay = second.takeReplay();
    expect(replay.map(({ record }) => record.instance)).to.deep.equal(['instance-1', 'instance-1', 'instance-1']);
    const { userAgent: _absent, ...expected } = charges[0];
    expect(replay[0].record.row).to.deep.equal(expected);
    expect(replay[1].record.row).to.deep.include({ requestId: 'c2', prices });
    expect(replay[2].record.row).to.deep.include({ prices: null, ttfbMs: 12.5, userAgent: 'curl/8' });
  });

  it('writes a price snapshot again in each segment that needs it, so a segment reads on its own', async () => {
    const prices = { tokens: { inputTokens: '1', cacheWriteTokens: '2', cacheWrite1hTokens: '3', cacheReadTokens: '4', outputTokens: '5', imageInputTokens: '0', imageOutputTokens: '0' }, tool_calls: {} };
    const first = openOutbox();
    const a = first.appendCharge(fullCharge('a', prices), null);
    await first.synced();
    first.drained([a]);
    // A segment all drained is closed for appends (at most once a second) and deleted; what follows goes to the next.
    const deadline = Date.now() + 5000;
    while (segments(dir).includes('0000000001.log') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(segments(dir)).to.deep.equal([]);
    first.appendCharge(fullCharge('b', prices), null);
    await first.close();
    expect(segments(dir)).to.deep.equal(['0000000002.log']);
    const read = [...readRecords(readFileSync(path.join(dir, '0000000002.log')))];
    expect(read.map((each) => each.ok && (each.record.row as ChargeRecord).prices)).to.deep.equal([prices]);
  });

  it('gives back, after a restart, every record appended and synced but not drained, in order', async () => {
    const first = openOutbox();
    const entries = ['a', 'b', 'c', 'd'].map((id) => first.append({ kind: 'charge', id, instance: null, row: row(id) }));
    expect(first.undrainedBytes).to.equal(entries.reduce((sum, entry) => sum + entry.bytes, 0));
    await first.synced();
    first.drained([entries[1]]);
    await first.synced();
    await first.close();

    const second = openOutbox();
    const replay = second.takeReplay();
    expect(replay.map(({ record }) => record.id)).to.deep.equal(['a', 'c', 'd']);
    expect(replay[0].record.row).to.deep.equal(row('a'));
    expect(second.undrainedBytes).to.equal(entries[0].bytes + entries[2].bytes + entries[3].bytes);
    expect(second.takeReplay(), 'given out once').to.deep.equal([]);
    second.drained(replay.map(({ entry }) => entry));
    await second.close();

    expect(segments(dir), 'drained segments are deleted').to.deep.equal([]);
    expect(openOutbox().takeReplay()).to.deep.equal([]);
  });

  it('skips a torn last record with an error line naming the file and offset, and replays the rest', async () => {
    const first = openOutbox();
    const entries = ['a', 'b', 'c'].map((id) => first.append({ kind: 'charge', id, instance: null, row: row(id) }));
    await first.close();
    const [file] = segments(dir);
    const size = readFileSync(path.join(dir, file)).length;
    truncateSync(path.join(dir, file), size - 7);

    const lines: string[] = [];
    const second = openOutbox(captureLogger('info', lines));
    expect(second.takeReplay().map(({ record }) => record.id)).to.deep.equal(['a', 'b']);
    const offset = entries[0].bytes + entries[1].bytes;
    const errors = lines.map((line) => JSON.parse(line) as { level: string; msg: string; offset: number });
    expect(errors).to.have.length(1);
    expect(errors[0].level).to.equal('error');
    expect(errors[0].offset).to.equal(offset);
    expect(errors[0].msg).to.include(`at offset ${offset} of ${path.join(dir, file)}`).and.include('cut short');
  });

  it('skips a damaged record in the middle (checksum) and replays those after it', async () => {
    const first = openOutbox();
    const entries = ['a', 'b', 'c'].map((id) => first.append({ kind: 'charge', id, instance: null, row: row(id) }));
    await first.close();
    const [file] = segments(dir);
    const bytes = readFileSync(path.join(dir, file));
    bytes[entries[0].bytes + 20] ^= 0xff;
    writeFileSync(path.join(dir, file), bytes);

    const lines: string[] = [];
    const second = openOutbox(captureLogger('info', lines));
    expect(second.takeReplay().map(({ record }) => record.id)).to.deep.equal(['a', 'c']);
    expect(lines).to.have.length(1);
    expect(lines[0]).to.include(`offset ${entries[0].bytes}`).and.include('checksum');
  });

  it('never appends after what a previous process left: new records go to a new segment', async () => {
    const first = openOutbox();
    first.append({ kind: 'charge', id: 'a', instance: null, row: row('a') });
    await first.close();
    const second = openOutbox();
    second.takeReplay();
    second.append({ kind: 'charge', id: 'b', instance: null, row: row('b') });
    await second.synced();
    expect(segments(dir)).to.deep.equal(['0000000001.log', '0000000002.log']);
  });

  it('keeps a second live process out (it takes the next free folder), and takes over the lock of one that is gone', async () => {
    writeFileSync(path.join(dir, 'lock'), String(process.ppid));
    expect(() => openOutbox()).to.throw(`the outbox ${dir} is in use by process ${process.ppid}`);
    const sibling = acquireOutbox(dir, { syncMs: 5, logger: silent });
    expect(sibling.dir).to.equal(`${dir}-2`);
    expect(acquireOutbox(dir, { syncMs: 5, logger: silent }), 'shared within the process').to.equal(sibling);
    await releaseOutbox(sibling);
    await releaseOutbox(sibling);
    rmSync(`${dir}-2`, { recursive: true, force: true });
    // A pid far above any pid_max: no such process.
    writeFileSync(path.join(dir, 'lock'), '999999999');
    const outbox = openOutbox();
    expect(readFileSync(path.join(dir, 'lock'), 'utf8')).to.equal(String(process.pid));
    expect(outbox.takeReplay()).to.deep.equal([]);
  });

  it('reports a disk that refuses writes, and clears it once a write succeeds again', async () => {
    const lines: string[] = [];
    const outbox = openOutbox(captureLogger('info', lines));
    rmSync(dir, { recursive: true, force: true });
    outbox.append({ kind: 'charge', id: 'a', instance: null, row: row('a') });
    await outbox.synced();
    expect(outbox.writeError?.message).to.include('ENOENT');
    expect(lines.some((line) => line.includes('writing to the outbox failed'))).to.equal(true);
    mkdirSync(dir);
    const deadline = Date.now() + 5000;
    while (outbox.writeError !== null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(outbox.writeError).to.equal(null);
    await outbox.close();
    expect(Outbox.open(dir, { syncMs: 5, logger: silent }).takeReplay().map(({ record }) => record.id)).to.deep.equal(['a']);
  });

  it('is read by ledger verify without its lock: what each folder (siblings and workers too) still holds', async () => {
    const first = Outbox.open(path.join(dir, 'outbox'), { syncMs: 5, logger: silent });
    const entries = ['a', 'b', 'c'].map((id, i) => first.append({ kind: 'charge', id, instance: null, row: { ...row(id), cost: BigInt(i + 1) } }));
    first.drained([entries[0]]);
    await first.synced();
    const worker = Outbox.open(path.join(dir, 'outbox', 'worker-2'), { syncMs: 5, logger: silent });
    worker.append({ kind: 'charge', id: 'w', instance: null, row: { ...row('w'), cost: 10n } });
    await worker.close();
    const sibling = Outbox.open(path.join(dir, 'outbox-2'), { syncMs: 5, logger: silent });
    await sibling.close();
    expect(scanOutboxes(path.join(dir, 'outbox'))).to.deep.equal([
      { dir: path.join(dir, 'outbox'), charges: 2, amount: 5n, owner: process.pid },
      { dir: path.join(dir, 'outbox', 'worker-2'), charges: 1, amount: 10n, owner: null },
    ]);
    await first.close();
  });

  describe('behind the ledger writer', () => {
    let store: SqliteStore;
    beforeEach(async () => {
      store = new SqliteStore(path.join(dir, 'ledger.db'));
      await store.migrate();
    });
    afterEach(async () => {
      await store.close();
    });

    async function funded(): Promise<{ accountId: string; keyId: string }> {
      const account = await store.createAccount({ name: `a${randomBytes(3).toString('hex')}`, role: 'user' });
      const key = await store.createKey({ accountId: account.id, name: null, hash: randomBytes(32), prefix: 'sk-t', last4: 'abcd' });
      await store.credit({ accountId: account.id, amount: 1_000_000n, kind: 'admin', actor: 'test', note: null });
      return { accountId: account.id, keyId: key.id };
    }

    /** The store as seen while it is unreachable: every ledger write fails. */
    const away = (target: SqliteStore): SqliteStore =>
      Object.create(target, { recordCharges: { value: () => Promise.reject(new Error('connect ECONNREFUSED')) } }) as SqliteStore;

    const charge = (who: { accountId: string; keyId: string }, requestId: string, cost: bigint): ChargeRecord => ({
      ...who, requestId, model: 'm', provider: 'p', endpoint: 'chat', inputTokens: 1, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0,
      outputTokens: 1,
      imageInputTokens: 0,
      imageOutputTokens: 0, cost, ...PLAIN_CHARGE, usageSource: 'upstream', status: 200, outcome: 'delivered', latencyMs: 1, createdAt: new Date(),
    });

    it('drains what it writes, and a restart writes the rest once: what the store had is a counted no-op', async () => {
      const who = await funded();
      const outboxDir = path.join(dir, 'outbox');
      const first = Outbox.open(outboxDir, { syncMs: 5, logger: silent });
      // The store is away: the charges wait in the outbox only.
      const writer = new LedgerWriter(away(store), { intervalMs: 5, maxRecords: 1000, outbox: first }, silent);
      const charges = Array.from({ length: 5 }, (_, i) => charge(who, `r${i}`, 100n + BigInt(i)));
      for (const each of charges) writer.enqueue(each);
      await first.synced();
      // Two of them reached the store before the crash, their drain not yet synced.
      await store.recordCharges(charges.slice(0, 2));
      await writer.close();
      await first.close();

      const second = Outbox.open(outboxDir, { syncMs: 5, logger: silent });
      const replayed: [number, number][] = [];
      const adopted: string[] = [];
      const next = new LedgerWriter(
        store,
        { intervalMs: 5, maxRecords: 1000, outbox: second, onReplayed: (written, already) => replayed.push([written, already]), onAdopt: (list) => adopted.push(...list.map((each) => each.charge.requestId)) },
        silent,
      );
      next.adopt(second.takeReplay());
      expect(adopted).to.deep.equal(['r0', 'r1', 'r2', 'r3', 'r4']);
      await next.flush();
      expect(replayed).to.deep.equal([[3, 2]]);
      const stored = await store.listCharges({ accountId: who.accountId, limit: 100 });
      expect(stored.map((each) => each.requestId).sort()).to.deep.equal(['r0', 'r1', 'r2', 'r3', 'r4']);
      expect(stored.find((each) => each.requestId === 'r3')).to.deep.include({ cost: 103n });
      expect((await store.balance(who.accountId)).balance).to.equal(1_000_000n - 510n);
      expect(second.undrainedBytes).to.equal(0);
      await next.close();
      await second.close();
      expect(segments(outboxDir)).to.deep.equal([]);
    });

    it('hands a closing writer\'s unwritten charges to the newer writer of the same store (a config reload)', async () => {
      const who = await funded();
      const outbox = openOutbox();
      const failing = away(store);
      const old = new LedgerWriter(failing, { intervalMs: 60_000, maxRecords: 1000, outbox }, silent);
      const newer = new LedgerWriter(failing, { intervalMs: 5, maxRecords: 1000, outbox }, silent);
      old.enqueue(charge(who, 'r1', 7n));
      await old.close();
      expect(newer.unwritten().map((each) => each.requestId)).to.deep.equal(['r1']);
      await newer.close();
      expect(outbox.takeReplay(), 'nothing replayed in the same process').to.deep.equal([]);
    });
  });
});
