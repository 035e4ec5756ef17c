/**
 * Reseeding a lost Redis balance with several instances on PostgreSQL + Redis: the seed subtracts what
 * every live instance settled and the ledger does not hold yet, and a seed racing a ledger write (under
 * way, hung before or after its commit, or committing between the seed's reads) counts its charges
 * exactly once. Two RedisBook instances, each with its own LedgerWriter, on one database.
 * Skipped, saying so, without the services.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import pino from 'pino';
import { BookUnavailableError } from '../../src/billing/book';
import { LedgerWriter } from '../../src/billing/ledger-writer';
import { openRedisBook, type RedisBook } from '../../src/billing/redis-book';
import { openStore } from '../../src/store/open';
import type { ChargeRecord, Store } from '../../src/store/store';
import { PLAIN_CHARGE } from '../helpers/charges';
import { createTestDatabase, postgresProblem, REDIS_URL, redisProblem, redisTestPrefix, type TestDatabase } from '../helpers/services';

const silent = pino({ level: 'silent' });

/** A store whose charge writes the test controls: refused (unreachable), or held before or after the commit. */
class GatedStore {
  unreachable = false;
  private gate: { where: 'before' | 'after'; open: Promise<void>; release: () => void; reached: () => void; arrived: Promise<void> } | null = null;

  constructor(readonly store: Store) {}

  /** The next write waits at `where` (before its commit, or after it before answering) until released. */
  hold(where: 'before' | 'after'): { arrived: Promise<void>; release: () => void } {
    let release!: () => void;
    let reached!: () => void;
    const open = new Promise<void>((resolve) => (release = resolve));
    const arrived = new Promise<void>((resolve) => (reached = resolve));
    this.gate = { where, open, release, reached, arrived };
    return { arrived, release };
  }

  async recordCharges(charges: readonly ChargeRecord[]): Promise<number> {
    if (this.unreachable) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const gate = this.gate;
    this.gate = null;
    if (gate?.where === 'before') {
      gate.reached();
      await gate.open;
    }
    const recorded = await this.store.recordCharges(charges);
    if (gate?.where === 'after') {
      gate.reached();
      await gate.open;
    }
    return recorded;
  }
}

/** The LedgerWriter's view of a gated store: every other method goes to the real one. */
function writerStore(gated: GatedStore): Store {
  return new Proxy(gated.store, {
    get: (target, name, receiver) => (name === 'recordCharges' ? gated.recordCharges.bind(gated) : Reflect.get(target, name, receiver)),
  });
}

interface Instance {
  readonly book: RedisBook;
  readonly gated: GatedStore;
  readonly writer: LedgerWriter;
}

describe('faults: reseeding a Redis balance with several instances (PostgreSQL + Redis)', function () {
  this.timeout(60_000);
  let database: TestDatabase;
  let prefix: ReturnType<typeof redisTestPrefix>;
  let store: Store;
  let redis: Redis;
  const instances: Instance[] = [];
  let requests = 0;

  before(async function () {
    const problem = (await postgresProblem()) ?? (await redisProblem());
    if (problem !== null) {
      console.log(`      ${problem}: suite skipped`);
      this.skip();
    }
    database = await createTestDatabase();
    prefix = redisTestPrefix('reseed');
    store = openStore({ url: database.url });
    await store.migrate();
    redis = new Redis(REDIS_URL);
  });

  after(async () => {
    for (const { writer, book, gated } of instances) {
      gated.unreachable = false;
      await writer.close();
      await book.close();
    }
    await store?.close();
    redis?.disconnect();
    await prefix?.clear();
    await database?.drop();
  });

  /** An instance: its book and a writer through it, `intervalMs` apart (a long one: a paused writer). */
  async function instance(intervalMs = 2): Promise<Instance> {
    const book = await openRedisBook({ url: REDIS_URL, key_prefix: prefix.prefix, command_timeout_ms: 2000 }, store);
    const gated = new GatedStore(store);
    const writer = new LedgerWriter(
      writerStore(gated),
      { intervalMs, maxRecords: 50, writeThrough: book.writeLedger.bind(book), onSetAside: (charge) => book.written([charge]) },
      silent,
    );
    const made = { book, gated, writer };
    instances.push(made);
    return made;
  }

  async function fundedAccount(amount: bigint): Promise<{ accountId: string; keyId: string }> {
    const account = await store.createAccount({ name: `reseed-${randomBytes(4).toString('hex')}`, role: 'user' });
    const key = await store.createKey({ accountId: account.id, name: null, hash: randomBytes(32), prefix: 'sk-test', last4: 'abcd', spendLimit: null });
    await store.credit({ accountId: account.id, amount, kind: 'admin', actor: 'test', note: null });
    return { accountId: account.id, keyId: key.id };
  }

  function charge(ids: { accountId: string; keyId: string }, cost: bigint): ChargeRecord {
    requests += 1;
    return {
      requestId: `req_reseed_${requests}_${randomBytes(3).toString('hex')}`, ...ids, model: 'm-test', provider: 'mock', endpoint: 'chat',
      inputTokens: 100, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 50, imageInputTokens: 0, imageOutputTokens: 0, cost, ...PLAIN_CHARGE,
      usageSource: 'upstream', status: 200, outcome: 'delivered', latencyMs: 5, createdAt: new Date(),
    };
  }

  /** What billing does when a request ends: the live balance first, then the ledger queue. */
  async function settle(at: Instance, settled: ChargeRecord): Promise<void> {
    await at.book.settle(settled);
    at.writer.enqueue(settled);
  }

  async function live(accountId: string): Promise<bigint> {
    const balance = await redis.hget(`${prefix.prefix}account:${accountId}`, 'balance');
    if (balance === null) throw new Error('no live balance');
    return BigInt(balance);
  }

  async function ledger(accountId: string): Promise<bigint> {
    return (await store.balance(accountId)).balance;
  }

  async function drained(...writers: Instance[]): Promise<void> {
    const deadline = Date.now() + 20_000;
    while (writers.some(({ writer }) => writer.pending > 0)) {
      if (Date.now() > deadline) throw new Error('the writers did not drain');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    // The last write's Redis step follows its commit.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  async function lose(accountId: string): Promise<void> {
    await redis.del(`${prefix.prefix}account:${accountId}`);
  }

  it('subtracts every live instance\'s undrained charges: one whose store is away, one whose writer is paused', async () => {
    const a = await instance();
    const b = await instance(60 * 60 * 1000);
    const ids = await fundedAccount(1_000_000n);
    await a.book.balance(ids.accountId); // seeded
    for (const cost of [1000n, 2000n]) await settle(a, charge(ids, cost));
    await drained(a);
    expect(await ledger(ids.accountId)).to.equal(997_000n);

    a.gated.unreachable = true;
    for (const cost of [100n, 200n, 300n]) await settle(a, charge(ids, cost)); // A's outage: undrained 600
    for (const cost of [40n, 50n]) await settle(b, charge(ids, cost)); // B's paused writer: undrained 90
    expect(await live(ids.accountId)).to.equal(997_000n - 690n);

    await lose(ids.accountId);
    // B reseeds: the ledger less A's 600 and its own 90, though only A knows A's.
    expect((await b.book.balance(ids.accountId)).balance).to.equal(997_000n - 690n);
    const hash = await redis.hgetall(`${prefix.prefix}account:${ids.accountId}`);
    expect(hash[`unwritten:${a.book.instance}`]).to.equal('600');
    expect(hash[`unwritten:${b.book.instance}`]).to.equal('90');

    a.gated.unreachable = false;
    await b.writer.flush();
    await drained(a, b);
    expect(await ledger(ids.accountId)).to.equal(997_000n - 690n);
    expect(await live(ids.accountId)).to.equal(await ledger(ids.accountId));
    expect(await a.book.drift(await store.ledgerTotals())).to.deep.equal([]);
  });

  it('puts back every live instance\'s undrained charges when Redis loses all it held, before any reseed', async () => {
    const a = await instance();
    const b = await instance(60 * 60 * 1000);
    const ids = await fundedAccount(1_000_000n);
    await a.book.balance(ids.accountId);
    a.gated.unreachable = true;
    for (const cost of [100n, 200n, 300n]) await settle(a, charge(ids, cost)); // A's store is away: undrained 600
    for (const cost of [40n, 50n]) await settle(b, charge(ids, cost)); // B's paused writer: undrained 90

    await prefix.clear(); // every key Tollgate had: as a Redis restarted without persistence, or flushed
    // B reseeds at once; A has not been told and finds out only by looking.
    expect((await b.book.balance(ids.accountId)).balance, 'reseeded less both instances\' undrained charges').to.equal(1_000_000n - 690n);
    const hash = await redis.hgetall(`${prefix.prefix}account:${ids.accountId}`);
    expect(hash[`unwritten:${a.book.instance}`]).to.equal('600');
    expect(hash[`unwritten:${b.book.instance}`]).to.equal('90');

    a.gated.unreachable = false;
    await b.writer.flush();
    await drained(a, b);
    expect(await ledger(ids.accountId)).to.equal(1_000_000n - 690n);
    expect(await live(ids.accountId)).to.equal(await ledger(ids.accountId));
    expect(await a.book.drift(await store.ledgerTotals())).to.deep.equal([]);
  });

  it('puts back a store write under way when Redis loses all it held, so a reseed counts it once', async () => {
    const a = await instance();
    const b = await instance();
    const ids = await fundedAccount(1_000_000n);
    await a.book.balance(ids.accountId);
    const held = a.gated.hold('after');
    await settle(a, charge(ids, 700n));
    await held.arrived; // committed, and A has not heard back yet

    await prefix.clear();
    expect((await b.book.balance(ids.accountId)).balance, 'reseeded').to.equal(999_300n);

    held.release();
    await drained(a);
    expect(await live(ids.accountId)).to.equal(999_300n);
    expect(await ledger(ids.accountId)).to.equal(999_300n);
    expect(await a.book.drift(await store.ledgerTotals())).to.deep.equal([]);
  });

  for (const where of ['before', 'after'] as const) {
    it(`counts a ledger write hung ${where} its commit once, without waiting for it`, async () => {
      const a = await instance();
      const b = await instance();
      const ids = await fundedAccount(1_000_000n);
      await a.book.balance(ids.accountId);
      const held = a.gated.hold(where);
      await settle(a, charge(ids, 700n));
      await held.arrived;
      expect(await ledger(ids.accountId), 'committed already').to.equal(where === 'after' ? 999_300n : 1_000_000n);

      await lose(ids.accountId);
      const started = performance.now();
      expect((await b.book.balance(ids.accountId)).balance, 'reseeded').to.equal(999_300n);
      expect(performance.now() - started, 'the seed did not wait for the write').to.be.below(5000);

      held.release();
      await drained(a);
      expect(await live(ids.accountId)).to.equal(999_300n);
      expect(await ledger(ids.accountId)).to.equal(999_300n);
      expect(await a.book.drift(await store.ledgerTotals())).to.deep.equal([]);
    });
  }

  it('stays exact when the balance is lost and reseeded over and over while two instances settle and write', async () => {
    const a = await instance(1);
    const b = await instance(1);
    const ids = await fundedAccount(10n ** 12n);
    await a.book.balance(ids.accountId);
    let settling = true;
    let settled = 0n;
    const load = [a, b].map(async (at, index) => {
      for (let i = 0; settling; i++) {
        const cost = BigInt(1 + ((i * 7 + index) % 13));
        await settle(at, charge(ids, cost));
        settled += cost;
        if (i % 4 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
    });
    let reseeds = 0;
    let refused = 0;
    const deadline = Date.now() + 3000;
    while (Date.now() < deadline) {
      await lose(ids.accountId);
      // A seed that keeps meeting writes gives up with the documented refusal (a 503 before anything
      // is held); on a loaded machine some do. Any other error, or a wrong balance after, fails.
      await [a, b][(reseeds + refused) % 2].book.balance(ids.accountId).then(
        () => (reseeds += 1),
        (error: unknown) => {
          if (!(error instanceof BookUnavailableError)) throw error;
          refused += 1;
        },
      );
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
    settling = false;
    await Promise.all(load);
    await drained(a, b);
    console.log(`      ${reseeds} reseeds (${refused} refused) while ${[a, b].length} instances settled ${settled} nano-units`);
    expect(reseeds, 'reseeds that raced the writes and landed').to.be.greaterThan(0);
    // The last loss may have been refused its seed: seeded now, with the writers quiet.
    await a.book.balance(ids.accountId);
    expect(await ledger(ids.accountId)).to.equal(10n ** 12n - settled);
    expect(await live(ids.accountId), 'the live balance after the last write').to.equal(await ledger(ids.accountId));
    expect(await a.book.drift(await store.ledgerTotals())).to.deep.equal([]);
  });
});
