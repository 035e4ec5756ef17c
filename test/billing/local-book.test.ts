/**
 * The in-process balance book of the embedded store: holds in memory, exact under concurrency, with
 * charges counted from settlement until the ledger has them, credits made elsewhere seen at once, and
 * the stored balance read once while nothing moves it.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LocalBook } from '../../src/billing/local-book';
import type { ChargeRecord, Hold } from '../../src/store/store';
import { SqliteStore } from '../../src/store/sqlite';
import { useMemoryStore } from '../helpers/memory-store';
import { PLAIN_CHARGE } from '../helpers/charges';

describe('billing/LocalBook', () => {
  const store = useMemoryStore();

  async function funded(amount: bigint, spendLimit: bigint | null = null): Promise<{ accountId: string; keyId: string }> {
    const account = await store().createAccount({ name: `a${randomBytes(3).toString('hex')}`, role: 'user' });
    const key = await store().createKey({ accountId: account.id, name: null, hash: randomBytes(32), prefix: 'sk-t', last4: 'abcd', spendLimit });
    if (amount > 0n) await store().credit({ accountId: account.id, amount, kind: 'admin', actor: 'test', note: null });
    return { accountId: account.id, keyId: key.id };
  }

  const hold = (who: { accountId: string; keyId: string }, requestId: string, amount: bigint): Hold => ({
    ...who,
    requestId,
    amount,
    expiresAt: new Date(Date.now() + 60_000),
  });

  const charge = (who: { accountId: string; keyId: string }, requestId: string, cost: bigint): ChargeRecord => ({
    ...who, requestId, model: 'm', provider: 'p', endpoint: 'chat', inputTokens: 1, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0,
    outputTokens: 1,
    imageInputTokens: 0,
    imageOutputTokens: 0, cost, ...PLAIN_CHARGE, usageSource: 'upstream', status: 200, outcome: 'delivered', latencyMs: 1, createdAt: new Date(),
  });

  it('admits exactly the holds the balance covers when 50 race', async () => {
    const who = await funded(350n);
    const book = new LocalBook(store());
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => book.hold(hold(who, `r${i}`, 100n))));
    expect(results.filter((result) => result.ok)).to.have.length(3);
    expect(results.find((result) => !result.ok)).to.deep.equal({ ok: false, reason: 'balance', available: 50n });
    expect(await book.balance(who.accountId)).to.deep.equal({ balance: 350n, held: 300n });
  });

  it('counts a settled charge until the ledger has it, then reads it from the store', async () => {
    const who = await funded(1000n);
    const book = new LocalBook(store());
    expect((await book.hold(hold(who, 'r1', 600n))).ok).to.equal(true);
    const settled = charge(who, 'r1', 450n);
    await book.settle(settled);
    expect(await book.balance(who.accountId)).to.deep.equal({ balance: 550n, held: 0n });
    // Not yet written: a new hold still sees 550 available, not 1,000.
    expect(await book.hold(hold(who, 'r2', 600n))).to.deep.include({ ok: false, available: 550n });
    await store().recordCharges([settled]);
    book.written([settled]);
    expect(await book.balance(who.accountId)).to.deep.equal({ balance: 550n, held: 0n });
    expect((await book.hold(hold(who, 'r3', 550n))).ok).to.equal(true);
  });

  it('holds against a key spend limit, counting queued and held spend', async () => {
    const who = await funded(10_000n, 500n);
    const book = new LocalBook(store());
    expect((await book.hold(hold(who, 'r1', 300n))).ok).to.equal(true);
    expect(await book.hold(hold(who, 'r2', 300n))).to.deep.equal({ ok: false, reason: 'key_spend_limit', available: 200n });
    await book.settle(charge(who, 'r1', 250n));
    expect((await book.hold(hold(who, 'r3', 250n))).ok).to.equal(true);
  });

  it('sees a credit written by another process at the next hold', async () => {
    const who = await funded(0n);
    const book = new LocalBook(store());
    expect((await book.hold(hold(who, 'r1', 10n))).ok).to.equal(false);
    await store().credit({ accountId: who.accountId, amount: 10n, kind: 'admin', actor: 'cli', note: 'top-up' });
    expect((await book.hold(hold(who, 'r2', 10n))).ok).to.equal(true);
  });

  it("sees a credit written through another connection to the file at the next turn's first hold", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'local-book-'));
    const served = new SqliteStore(path.join(dir, 'ledger.db'));
    const cli = new SqliteStore(path.join(dir, 'ledger.db'));
    try {
      await served.migrate();
      const account = await served.createAccount({ name: 'cli-credit', role: 'user' });
      const key = await served.createKey({ accountId: account.id, name: null, hash: randomBytes(32), prefix: 'sk-t', last4: 'abcd', spendLimit: null });
      const who = { accountId: account.id, keyId: key.id };
      const book = new LocalBook(served);
      expect(await book.hold(hold(who, 'r1', 10n))).to.deep.include({ ok: false, available: 0n });
      await cli.credit({ accountId: account.id, amount: 25n, kind: 'admin', actor: 'cli', note: null });
      // Another process's commit reaches this one no sooner than its next event-loop turn.
      await new Promise<void>((resolve) => setImmediate(resolve));
      expect((await book.hold(hold(who, 'r2', 10n))).ok).to.equal(true);
      expect(await book.hold(hold(who, 'r3', 16n))).to.deep.include({ ok: false, available: 15n });
    } finally {
      await cli.close();
      await served.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads the stored balance once for holds in a row, and again once a charge is written', async () => {
    const who = await funded(1000n);
    const reads: string[] = [];
    const read = store().balance.bind(store());
    store().balance = async (accountId: string) => {
      reads.push(accountId);
      return read(accountId);
    };
    const book = new LocalBook(store());
    for (const id of ['r1', 'r2', 'r3']) expect((await book.hold(hold(who, id, 100n))).ok).to.equal(true);
    expect(reads).to.have.length(1);
    const settled = charge(who, 'r1', 100n);
    await book.settle(settled);
    await store().recordCharges([settled]);
    book.written([settled]);
    // 1,000 − 100 written − 200 held: exactly 700 left, read from the store again.
    expect(await book.hold(hold(who, 'r4', 701n))).to.deep.include({ ok: false, available: 700n });
    expect(reads).to.have.length(2);
    expect((await book.hold(hold(who, 'r5', 700n))).ok).to.equal(true);
  });

  it('reads the balance again when a charge is written while it is read', async () => {
    const who = await funded(1000n);
    const book = new LocalBook(store());
    const settled = charge(who, 'r1', 100n);
    await book.settle(settled);
    const read = store().balance.bind(store());
    let overtaken = false;
    store().balance = async (accountId: string) => {
      const before = await read(accountId);
      if (!overtaken) {
        // The ledger writes the charge after this read and before the book uses it: 1,000 is stale.
        overtaken = true;
        await store().recordCharges([settled]);
        book.written([settled]);
      }
      return before;
    };
    expect(await book.hold(hold(who, 'r2', 901n))).to.deep.include({ ok: false, available: 900n });
    expect((await book.hold(hold(who, 'r3', 900n))).ok).to.equal(true);
  });

  it('refuses a second hold under the same request id', async () => {
    const who = await funded(100n);
    const book = new LocalBook(store());
    await book.hold(hold(who, 'r1', 10n));
    let error: unknown;
    await book.hold(hold(who, 'r1', 10n)).catch((err: unknown) => (error = err));
    expect(String(error)).to.match(/already holds funds/);
  });
});
