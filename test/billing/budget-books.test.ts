/**
 * Budgets in every balance book: the in-process one (SQLite, one instance), the store's rows (SQLite
 * under workers, PostgreSQL without Redis) and Redis (two books sharing one prefix, as two instances
 * do). Each admits exactly what a budget covers when holds race, counts the ledger's charges of the
 * period and none before it, and applies a changed budget at once.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import type { BalanceBook } from '../../src/billing/book';
import { periodAt } from '../../src/billing/budget-period';
import { openRedisBook } from '../../src/billing/redis-book';
import { SqliteStore } from '../../src/store/sqlite';
import type { BudgetCheck, BudgetScope, ChargeRecord } from '../../src/store/store';
import { PLAIN_CHARGE } from '../helpers/charges';
import { Redis } from 'ioredis';
import { healLiveBalances, verifyLiveBalances } from '../../src/cli/ledger';
import { REDIS_URL, redisProblem, redisTestPrefix } from '../helpers/services';
import { bookSetups, type Setup } from '../helpers/balance-books';

interface Who {
  readonly accountId: string;
  readonly keyId: string;
}

const HOLD = 1_000n;

function budget(scope: BudgetScope, id: string, amount: bigint, at = new Date(), timezone = 'UTC'): BudgetCheck {
  const { start, end } = periodAt(at, 'day', timezone);
  return { scope, id, amount, period: 'day', timezone, start, end };
}

function charge(who: Who, cost: bigint, createdAt = new Date()): ChargeRecord {
  return {
    ...who, requestId: `req_${randomBytes(6).toString('hex')}`, model: 'm', provider: 'p', endpoint: 'chat', inputTokens: 1, cacheWriteTokens: 0,
    cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 1, imageInputTokens: 0, imageOutputTokens: 0, cost, ...PLAIN_CHARGE, usageSource: 'upstream', status: 200, outcome: 'delivered',
    latencyMs: 1, createdAt,
  };
}

for (const [name, open] of Object.entries(bookSetups('budgets'))) {
  describe(`billing/budgets in the ${name}`, function () {
    this.timeout(20_000);
    let setup: Setup;

    before(async function () {
      const opened = await open();
      if (typeof opened === 'string') {
        console.log(`      ${opened}: skipped`);
        this.skip();
      }
      setup = opened;
    });

    after(async () => setup?.close());

    async function funded(keys = 1): Promise<{ accountId: string; keyIds: string[] }> {
      const account = await setup.store.createAccount({ name: `b${randomBytes(4).toString('hex')}`, role: 'user' });
      const keyIds: string[] = [];
      for (let i = 0; i < keys; i++) keyIds.push((await setup.store.createKey({ accountId: account.id, name: null, hash: randomBytes(32), prefix: 'sk-t', last4: 'abcd' })).id);
      await setup.store.credit({ accountId: account.id, amount: 1_000_000n, kind: 'admin', actor: 'test', note: null });
      return { accountId: account.id, keyIds };
    }

    /** Settles in the book and writes to the ledger, as billing and its ledger writer do. */
    async function settle(book: BalanceBook, record: ChargeRecord, budgets: readonly BudgetCheck[]): Promise<void> {
      await book.settle(record, budgets);
      await setup.store.recordCharges([record]);
      book.written([record]);
    }

    function holdAll(requests: number, who: (i: number) => Who, budgets: (who: Who) => BudgetCheck[]) {
      return Promise.all(
        Array.from({ length: requests }, (_, i) => {
          const book = setup.books[i % setup.books.length];
          const owner = who(i);
          const requestId = `req_${randomBytes(6).toString('hex')}`;
          return book.hold({ ...owner, requestId, amount: HOLD, expiresAt: new Date(Date.now() + 60_000), budgets: budgets(owner) }).then((result) => ({ result, requestId, owner, book }));
        }),
      );
    }

    it("admits exactly 3 of 20 racing holds against a key's budget for 3, and names the budget in the refusals", async () => {
      const { accountId, keyIds } = await funded();
      const results = await holdAll(20, () => ({ accountId, keyId: keyIds[0] }), (who) => [budget('key', who.keyId, 3n * HOLD)]);
      expect(results.filter(({ result }) => result.ok)).to.have.length(3);
      const refused = results.map(({ result }) => result).filter((result) => !result.ok);
      expect(refused).to.have.length(17);
      for (const result of refused) {
        expect(result).to.include({ ok: false, reason: 'budget', available: 0n });
        expect(result.ok === false && result.reason === 'budget' && result.budget.scope).to.equal('key');
      }
    });

    it("admits exactly 3 of 20 racing holds spread over two keys against the account's budget for 3", async () => {
      const { accountId, keyIds } = await funded(2);
      const results = await holdAll(20, (i) => ({ accountId, keyId: keyIds[i % 2] }), () => [budget('account', accountId, 3n * HOLD)]);
      expect(results.filter(({ result }) => result.ok)).to.have.length(3);
    });

    it('checks every budget that applies: the tighter one refuses', async () => {
      const { accountId, keyIds } = await funded();
      const results = await holdAll(10, () => ({ accountId, keyId: keyIds[0] }), (who) => [budget('key', who.keyId, 5n * HOLD), budget('account', accountId, 2n * HOLD)]);
      expect(results.filter(({ result }) => result.ok)).to.have.length(2);
      const refusal = results.find(({ result }) => !result.ok)!.result;
      expect(refusal.ok === false && refusal.reason === 'budget' && refusal.budget.scope).to.equal('account');
    });

    it("counts the period's charges and what is held, and none of the previous period's", async () => {
      const { accountId, keyIds } = await funded();
      const who = { accountId, keyId: keyIds[0] };
      const now = new Date();
      const today = budget('key', who.keyId, 3n * HOLD, now);
      // Yesterday's spend is in the ledger but not in today's period.
      await setup.store.recordCharges([charge(who, 50n * HOLD, new Date(today.start.getTime() - 1))]);
      const book = setup.books[0];
      await settle(book, charge(who, HOLD + 1n), [today]);
      expect(await book.budgetSpent(today)).to.equal(HOLD + 1n);
      // 3 holds' worth less 1001 spent: one hold fits, the second does not.
      const first = await book.hold({ ...who, requestId: 'r1-' + who.keyId, amount: HOLD, expiresAt: new Date(Date.now() + 60_000), budgets: [today] });
      expect(first).to.deep.equal({ ok: true });
      const second = await setup.books[setup.books.length - 1].hold({ ...who, requestId: 'r2-' + who.keyId, amount: HOLD, expiresAt: new Date(Date.now() + 60_000), budgets: [today] });
      expect(second).to.deep.include({ ok: false, reason: 'budget', available: HOLD - 1n });
      // The period before, as a budget would see it had it been checked then, holds the old charge.
      const yesterday = budget('key', who.keyId, 3n * HOLD, new Date(today.start.getTime() - 1));
      expect(await book.budgetSpent(yesterday)).to.equal(50n * HOLD);
    });

    it('applies a changed budget at once: the same period, a larger amount admits what the smaller refused', async () => {
      const { accountId, keyIds } = await funded();
      const who = { accountId, keyId: keyIds[0] };
      const small = budget('key', who.keyId, HOLD);
      await settle(setup.books[0], charge(who, HOLD / 2n), [small]);
      const refused = await setup.books[0].hold({ ...who, requestId: `s-${who.keyId}`, amount: HOLD, expiresAt: new Date(Date.now() + 60_000), budgets: [small] });
      expect(refused).to.deep.include({ ok: false, reason: 'budget' });
      const larger = { ...small, amount: 2n * HOLD };
      const admitted = await setup.books[0].hold({ ...who, requestId: `l-${who.keyId}`, amount: HOLD, expiresAt: new Date(Date.now() + 60_000), budgets: [larger] });
      expect(admitted).to.deep.equal({ ok: true });
      // Switched to a weekly budget in Tokyo: another period, the same ledger, the same rule.
      const weekly = { ...larger, period: 'week' as const, timezone: 'Asia/Tokyo', ...periodAt(new Date(), 'week', 'Asia/Tokyo') };
      const spentThisWeek = await setup.books[0].budgetSpent(weekly);
      expect(spentThisWeek >= HOLD / 2n).to.equal(true);
    });

    it('frees the budget a settled hold held, and takes what the charge cost instead', async () => {
      const { accountId, keyIds } = await funded();
      const who = { accountId, keyId: keyIds[0] };
      const check = budget('account', accountId, 2n * HOLD);
      const book = setup.books[0];
      const requestId = `f-${who.keyId}`;
      expect(await book.hold({ ...who, requestId, amount: HOLD, expiresAt: new Date(Date.now() + 60_000), budgets: [check] })).to.deep.equal({ ok: true });
      await settle(book, { ...charge(who, HOLD / 4n), requestId, held: HOLD }, [check]);
      expect(await book.budgetSpent(check)).to.equal(HOLD / 4n);
      const next = await book.hold({ ...who, requestId: `g-${who.keyId}`, amount: HOLD + HOLD / 2n, expiresAt: new Date(Date.now() + 60_000), budgets: [check] });
      expect(next).to.deep.equal({ ok: true });
    });
  });
}

describe('billing/budgets: ledger verify and heal cover the live period spends (Redis)', function () {
  this.timeout(20_000);
  let store: SqliteStore;
  let redis: ReturnType<typeof redisTestPrefix>;
  let book: Awaited<ReturnType<typeof openRedisBook>>;
  let raw: Redis;

  before(async function () {
    const problem = await redisProblem();
    if (problem !== null) {
      console.log(`      ${problem}: skipped`);
      this.skip();
    }
    store = new SqliteStore(':memory:');
    await store.migrate();
    redis = redisTestPrefix('budget-verify');
    book = await openRedisBook({ url: REDIS_URL, key_prefix: redis.prefix, command_timeout_ms: 2000 }, store);
    raw = new Redis(REDIS_URL);
  });

  after(async () => {
    if (raw === undefined) return;
    raw.disconnect();
    await book.close();
    await redis.clear();
    await store.close();
  });

  it('names a budget whose live spend drifted, exits non-zero, and heal rebuilds it from the ledger', async () => {
    const account = await store.createAccount({ name: 'verify', role: 'user' });
    const key = await store.createKey({ accountId: account.id, name: null, hash: randomBytes(32), prefix: 'sk-t', last4: 'abcd' });
    await store.credit({ accountId: account.id, amount: 1_000_000n, kind: 'admin', actor: 'test', note: null });
    const who = { accountId: account.id, keyId: key.id };
    const check = budget('key', key.id, 10n * HOLD);
    expect(await book.budgetSpent(check)).to.equal(0n);
    const record = charge(who, 700n);
    await book.settle(record, [check]);
    await store.recordCharges([record]);
    book.written([record]);
    const queued = charge(who, 300n);
    book.countUnwritten((counts) => (counts(queued) ? queued.cost : 0n));
    await book.settle(queued, [check]);
    // Settled and not yet written (this instance is alive): counted live, not drift.
    const lines: string[] = [];
    expect(await verifyLiveBalances(store, book, (line) => lines.push(line))).to.equal(0);
    expect(lines).to.include('live budget spends OK');

    const [name] = await raw.keys(`${redis.prefix}budget:key:${key.id}:*`);
    await raw.hincrby(name, 'spent', 55);
    lines.length = 0;
    expect(await verifyLiveBalances(store, book, (line) => lines.push(line))).to.equal(1);
    expect(lines.find((line) => line.startsWith('DRIFT  budget of key'))).to.include(key.id).and.include('off by 0.000000055');

    lines.length = 0;
    expect(await healLiveBalances(store, book, (line) => lines.push(line))).to.equal(true);
    expect(lines).to.include('healed 1 budgets');
    // Seeded again from the ledger plus this instance's charge still on its way to it.
    expect(await book.budgetSpent(check)).to.equal(700n + 300n);
  });
});
