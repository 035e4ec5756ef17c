/**
 * RedisBook against a real Redis (127.0.0.1:6379, or TOLLGATE_TEST_REDIS_URL), every key under a prefix
 * of its own, removed afterwards. The ledger is an in-memory SQLite store.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { Redis } from 'ioredis';
import { BookUnavailableError } from '../../src/billing/book';
import { openRedisBook, RedisBook } from '../../src/billing/redis-book';
import type { RedisConfig } from '../../src/config/types';
import { connectRedis } from '../../src/shared-state/redis';
import { SqliteStore } from '../../src/store/sqlite';
import type { ChargeRecord, HoldResult, Store } from '../../src/store/store';
import { PLAIN_CHARGE } from '../helpers/charges';

const REDIS_URL = process.env.TOLLGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const COMMAND_TIMEOUT_MS = 300;
const TWO_53 = 2n ** 53n;

interface Ids {
  readonly accountId: string;
  readonly keyId: string;
}

describe('billing/RedisBook', function () {
  const prefix = `tollgate-test:${randomBytes(6).toString('hex')}:`;
  const config: RedisConfig = { url: REDIS_URL, key_prefix: prefix, command_timeout_ms: COMMAND_TIMEOUT_MS };
  let raw: Redis | null = null;
  let store: SqliteStore;
  let bookA: RedisBook;
  let bookB: RedisBook;
  const extraBooks: RedisBook[] = [];
  let accounts = 0;

  before(async function () {
    raw = new Redis(REDIS_URL, { lazyConnect: true, connectTimeout: 1000, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
    raw.on('error', () => undefined);
    try {
      await raw.connect();
      await raw.ping();
    } catch {
      raw.disconnect();
      raw = null;
      console.log(`      Redis not reachable at ${REDIS_URL.replace(/\/\/[^@/]*@/, '//')}: Redis balance book suite skipped`);
      this.skip();
    }
    store = new SqliteStore(':memory:');
    await store.migrate();
    bookA = await openRedisBook(config, store);
    bookB = await openRedisBook(config, store);
  });

  after(async () => {
    if (raw === null) return;
    await Promise.all([bookA.close(), bookB.close(), ...extraBooks.map((book) => book.close())]);
    let cursor = '0';
    do {
      const [next, keys] = await raw.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      if (keys.length > 0) await raw.del(...keys);
      cursor = next;
    } while (cursor !== '0');
    await raw.quit();
    await store.close();
  });

  /** An account holding `balance` in the ledger (Redis knows nothing of it yet) and one key. */
  async function newAccount(balance: bigint, spendLimit: bigint | null = null): Promise<Ids> {
    accounts += 1;
    const account = await store.createAccount({ name: `redis-book-${accounts}`, role: 'user' });
    const key = await store.createKey({ accountId: account.id, name: null, hash: randomBytes(32), prefix: 'sk-test', last4: 'abcd', spendLimit });
    if (balance > 0n) await store.credit({ accountId: account.id, amount: balance, kind: 'admin', actor: 'test', note: null });
    return { accountId: account.id, keyId: key.id };
  }

  function hold(book: RedisBook, ids: Ids, requestId: string, amount: bigint, expiresInMs = 60_000): Promise<HoldResult> {
    return book.hold({ requestId, ...ids, amount, expiresAt: new Date(Date.now() + expiresInMs) });
  }

  function charge(ids: Ids, requestId: string, cost: bigint): ChargeRecord {
    return {
      requestId, ...ids, model: 'm-test', provider: 'mock', endpoint: 'chat', inputTokens: 100, cacheWriteTokens: 0, cacheWrite1hTokens: 0,
      cacheReadTokens: 0, outputTokens: 50, imageInputTokens: 0, imageOutputTokens: 0, cost, ...PLAIN_CHARGE, usageSource: 'upstream', status: 200, outcome: 'delivered', latencyMs: 5,
      createdAt: new Date(),
    };
  }

  function keyHash(keyId: string): Promise<Record<string, string>> {
    return raw!.hgetall(`${prefix}key:${keyId}`);
  }

  it('seeds an account balance and a key spend and limit from the store on first use', async () => {
    const ids = await newAccount(1000n, 500n);
    await store.recordCharges([charge(ids, 'seed-prior', 100n)]);
    expect(await raw!.exists(`${prefix}account:${ids.accountId}`)).to.equal(0);

    expect(await hold(bookA, ids, 'seed-1', 400n)).to.deep.equal({ ok: true });
    expect(await bookB.balance(ids.accountId)).to.deep.equal({ balance: 900n, held: 400n });
    expect(await keyHash(ids.keyId)).to.deep.equal({ limit: '500', spent: '100', held: '400' });
    expect(await hold(bookB, ids, 'seed-2', 1n)).to.deep.equal({ ok: false, reason: 'key_spend_limit', available: 0n });
  });

  it('admits exactly 3 of 50 concurrent holds from two instances when the balance covers 3', async () => {
    const ids = await newAccount(900n);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => hold(i % 2 === 0 ? bookA : bookB, ids, `race-${i}`, 300n)),
    );
    const admitted = results.filter((result) => result.ok);
    expect(admitted).to.have.length(3);
    for (const result of results.filter((r) => !r.ok)) {
      expect(result).to.include({ ok: false, reason: 'balance' });
      const { available } = result as { available: bigint };
      expect(available >= 0n && available < 300n, `available ${available}`).to.equal(true);
    }
    expect(await bookA.balance(ids.accountId)).to.deep.equal({ balance: 900n, held: 900n });
    expect((await store.balance(ids.accountId)).balance).to.equal(900n);
  });

  it('refuses holds beyond a key spend limit across instances, saying what is left', async () => {
    const ids = await newAccount(10_000n, 1000n);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => hold(i % 2 === 0 ? bookA : bookB, ids, `limit-${i}`, 300n)),
    );
    expect(results.filter((result) => result.ok)).to.have.length(3);
    for (const result of results.filter((r) => !r.ok)) {
      expect(result).to.deep.equal({ ok: false, reason: 'key_spend_limit', available: 100n });
    }
    expect(await bookA.balance(ids.accountId)).to.deep.equal({ balance: 10_000n, held: 900n });
  });

  it('settles the whole cost, above the hold too, frees the hold, and ignores a repeated settlement', async () => {
    const ids = await newAccount(1000n);
    expect((await hold(bookA, ids, 'settle-1', 300n)).ok).to.equal(true);
    await bookB.settle(charge(ids, 'settle-1', 450n));
    // 450 taken although 300 was held: the ledger records the same charge, with 150 of overage.
    expect(await bookA.balance(ids.accountId)).to.deep.equal({ balance: 550n, held: 0n });
    expect(await keyHash(ids.keyId)).to.include({ spent: '450', held: '0' });
    expect(await raw!.exists(`${prefix}hold:settle-1`)).to.equal(0);
    expect(await raw!.zscore(`${prefix}hold-expiries`, 'settle-1')).to.equal(null);

    await bookA.settle(charge(ids, 'settle-1', 450n));
    await bookB.settle(charge(ids, 'settle-1', 10n));
    expect(await bookA.balance(ids.accountId)).to.deep.equal({ balance: 550n, held: 0n });

    expect((await hold(bookA, ids, 'settle-2', 300n)).ok).to.equal(true);
    await bookA.settle(charge(ids, 'settle-2', 120n));
    expect(await bookA.balance(ids.accountId)).to.deep.equal({ balance: 430n, held: 0n });
    expect(await keyHash(ids.keyId)).to.include({ spent: '570', held: '0' });
  });

  it('settles a swept hold at its whole cost, as the ledger will record it, below zero if need be', async () => {
    const ids = await newAccount(500n);
    expect((await hold(bookA, ids, 'swept-1', 300n, -1000)).ok).to.equal(true);
    expect((await hold(bookA, ids, 'swept-2', 100n)).ok).to.equal(true);
    expect(await bookB.releaseExpired(new Date())).to.equal(1);

    await bookA.settle(charge(ids, 'swept-1', 450n));
    expect(await bookA.balance(ids.accountId)).to.deep.equal({ balance: 50n, held: 100n });
    await bookA.settle(charge(ids, 'never-held', 50n));
    expect(await bookA.balance(ids.accountId)).to.deep.equal({ balance: 0n, held: 100n });
    await bookA.settle(charge(ids, 'swept-2', 100n));
    expect(await bookA.balance(ids.accountId)).to.deep.equal({ balance: -100n, held: 0n });
    // Below zero, nothing more is admitted.
    expect((await hold(bookA, ids, 'after', 1n)).ok).to.equal(false);
  });

  it('adds a credit to a seeded balance once, and to an unseeded one through the ledger', async () => {
    const seeded = await newAccount(1000n);
    expect((await bookA.balance(seeded.accountId)).balance).to.equal(1000n);
    const record = await bookB.credit({ accountId: seeded.accountId, amount: 250n, kind: 'topup', actor: 'test', note: null });
    expect(record.amount).to.equal(250n);
    expect((await bookA.balance(seeded.accountId)).balance).to.equal(1250n);
    expect((await store.balance(seeded.accountId)).balance).to.equal(1250n);

    const unseeded = await newAccount(1000n);
    await bookB.credit({ accountId: unseeded.accountId, amount: 250n, kind: 'topup', actor: 'test', note: null });
    expect((await bookA.balance(unseeded.accountId)).balance).to.equal(1250n);
  });

  it('keeps a seed from counting a credit twice while the credit is still being written', async () => {
    const ids = await newAccount(1000n);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    // The credit reaches the ledger at once but its Redis step waits for the gate: a seed reading the
    // ledger now would see the credit, and the credit's Redis step would then add it again.
    const slowStore = new Proxy(store, {
      get(target, property) {
        if (property === 'credit') return async (...args: Parameters<Store['credit']>) => {
          const record = await target.credit(...args);
          await gate;
          return record;
        };
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const slowBook = new RedisBook(await connectRedis(config), slowStore, prefix);
    extraBooks.push(slowBook);

    const crediting = slowBook.credit({ accountId: ids.accountId, amount: 250n, kind: 'topup', actor: 'test', note: null });
    await delay(30);
    let seededEarly = false;
    const reading = bookA.balance(ids.accountId).then((balance) => ((seededEarly = true), balance));
    await delay(60);
    expect(seededEarly, 'the seed waited for the credit').to.equal(false);
    open();
    await crediting;
    expect((await reading).balance).to.equal(1250n);
    expect((await bookB.balance(ids.accountId)).balance).to.equal(1250n);
  });

  it('releases each expired hold exactly once when two instances sweep at once', async () => {
    const ids = await newAccount(100_000n);
    await Promise.all(Array.from({ length: 40 }, (_, i) => hold(i % 2 === 0 ? bookA : bookB, ids, `sweep-${i}`, 100n, -1000)));
    expect((await hold(bookA, ids, 'sweep-live', 100n)).ok).to.equal(true);
    const now = new Date();
    const counts = await Promise.all([bookA.releaseExpired(now), bookB.releaseExpired(now), bookA.releaseExpired(now), bookB.releaseExpired(now)]);
    expect(counts.reduce((sum, count) => sum + count, 0)).to.equal(40);
    expect(await bookA.balance(ids.accountId)).to.deep.equal({ balance: 100_000n, held: 100n });
    expect(await keyHash(ids.keyId)).to.include({ held: '100' });
    expect(await bookB.releaseExpired(new Date())).to.equal(0);
    expect(await raw!.zscore(`${prefix}hold-expiries`, 'sweep-live')).to.not.equal(null);
  });

  it('compares amounts beyond 2^53 nano-units exactly, where doubles would round', async () => {
    // 2^53 + 3 is rounded to 2^53 + 4 as a double, so a double comparison would admit this hold.
    const ids = await newAccount(TWO_53 + 3n);
    expect(await hold(bookA, ids, 'big-1', TWO_53 + 4n)).to.deep.equal({ ok: false, reason: 'balance', available: TWO_53 + 3n });
    expect(await hold(bookA, ids, 'big-2', TWO_53 + 3n)).to.deep.equal({ ok: true });
    await bookA.settle(charge(ids, 'big-2', TWO_53 + 1n));
    expect(await bookA.balance(ids.accountId)).to.deep.equal({ balance: 2n, held: 0n });
  });

  it('refuses amounts outside 1..2^63 − 1 before touching Redis', async () => {
    const ids = await newAccount(1000n);
    for (const amount of [0n, -5n, 2n ** 63n]) {
      const error = await hold(bookA, ids, `range-${amount}`, amount).then(() => null, (e: unknown) => e);
      expect(error).to.be.instanceOf(RangeError);
    }
    expect(await raw!.exists(`${prefix}account:${ids.accountId}`)).to.equal(0);
  });

  it('takes a hold retried under the same request id once, and refuses a different one under it', async () => {
    const ids = await newAccount(1000n);
    expect(await hold(bookA, ids, 'twice', 300n)).to.deep.equal({ ok: true });
    expect(await hold(bookB, ids, 'twice', 300n)).to.deep.equal({ ok: true });
    expect((await bookA.balance(ids.accountId)).held).to.equal(300n);
    const error = await hold(bookA, ids, 'twice', 200n).then(() => null, (e: unknown) => e);
    expect(error).to.be.instanceOf(Error).and.not.instanceOf(BookUnavailableError);
    expect((error as Error).message).to.match(/already holds funds/);
  });

  it('follows a key limit changed while the key is live', async () => {
    const ids = await newAccount(10_000n, 300n);
    expect((await hold(bookA, ids, 'relimit-1', 300n)).ok).to.equal(true);
    expect(await hold(bookA, ids, 'relimit-2', 100n)).to.deep.equal({ ok: false, reason: 'key_spend_limit', available: 0n });
    await bookB.setKeyLimit(ids.keyId, 400n);
    expect((await hold(bookA, ids, 'relimit-3', 100n)).ok).to.equal(true);
    await bookB.setKeyLimit(ids.keyId, null);
    expect((await hold(bookA, ids, 'relimit-4', 5000n)).ok).to.equal(true);
  });

  it('refuses holds for an account or key the store does not know', async () => {
    const ids = await newAccount(1000n);
    expect(await hold(bookA, { accountId: 'acc_missing', keyId: ids.keyId }, 'ghost-1', 1n)).to.deep.equal({ ok: false, reason: 'balance', available: 0n });
    expect(await hold(bookA, { accountId: ids.accountId, keyId: 'key_missing' }, 'ghost-2', 1n)).to.deep.equal({ ok: false, reason: 'key_spend_limit', available: 0n });
    const error = await bookA.balance('acc_missing').then(() => null, (e: unknown) => e);
    expect((error as Error).message).to.match(/no account/);
  });

  it('counts a stopped instance\'s charges as on their way while its outbox is registered, and as its own once replayed', async () => {
    const ids = await newAccount(1000n);
    const stopped = await openRedisBook(config, store);
    expect((await hold(stopped, ids, 'outbox-1', 300n)).ok).to.equal(true);
    await stopped.settle(charge(ids, 'outbox-1', 300n));
    await stopped.registerOutbox('host-a:/data/outbox');
    await stopped.close(); // its heartbeat ends; the charge is in its outbox, not in the ledger
    const totals = (await store.ledgerTotals()).filter((each) => each.accountId === ids.accountId);
    expect(await bookB.drift(totals), 'not drift while its outbox holds it').to.deep.equal([]);
    expect(await bookB.stoppedOutboxes()).to.deep.equal([{ instance: stopped.instance, where: 'host-a:/data/outbox', accounts: 1, amount: 300n }]);

    // Restarted as bookB: the replayed charge moves to bookB's figure, the registration goes.
    await bookB.adopt([{ charge: charge(ids, 'outbox-1', 300n), instance: stopped.instance }]);
    expect(await bookB.stoppedOutboxes()).to.deep.equal([]);
    expect(await bookB.drift(totals), 'bookB is alive and has it queued').to.deep.equal([]);
    await store.recordCharges([charge(ids, 'outbox-1', 300n)]);
    bookB.written([charge(ids, 'outbox-1', 300n)]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await bookB.drift((await store.ledgerTotals()).filter((each) => each.accountId === ids.accountId))).to.deep.equal([]);
    expect(await raw!.hget(`${prefix}account:${ids.accountId}`, `unwritten:${stopped.instance}`), 'nothing left under the stopped instance').to.equal(null);
  });

  it("moves a stopped instance's undrained key and budget figures with its replayed charges, and reseeds spend with them", async () => {
    const ids = await newAccount(1000n, 800n);
    const now = new Date();
    const budget = { scope: 'account' as const, id: ids.accountId, amount: 900n, period: 'month' as const, timezone: 'UTC', start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)), end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)) };
    const field = `b:account:${ids.accountId}:${budget.start.getTime()}:${budget.end.getTime()}`;
    const stopped = await openRedisBook(config, store);
    expect((await stopped.hold({ requestId: 'move-1', ...ids, amount: 300n, expiresAt: new Date(Date.now() + 60_000), budgets: [budget] })).ok).to.equal(true);
    await stopped.settle(charge(ids, 'move-1', 300n), [budget]);
    await stopped.registerOutbox('host-a:/data/outbox');
    await stopped.close();
    const undrained = (instance: string): Promise<Record<string, string>> => raw!.hgetall(`${prefix}undrained:${instance}`);
    expect(await undrained(stopped.instance)).to.deep.equal({ [ids.accountId]: '300', [`k:${ids.keyId}`]: '300', [field]: '300' });

    await bookB.adopt([{ charge: charge(ids, 'move-1', 300n), instance: stopped.instance }]);
    expect(await undrained(stopped.instance), 'nothing left under the stopped instance').to.deep.equal({});
    const moved = await undrained(bookB.instance);
    expect([moved[ids.accountId], moved[`k:${ids.keyId}`], moved[field]]).to.deep.equal(['300', '300', '300']);

    // Lost and reseeded before the ledger has the charge: the spend counts it, from bookB's figures.
    await raw!.del(`${prefix}key:${ids.keyId}`, `${prefix}budget:${field.slice(2)}`);
    expect(await bookA.budgetSpent(budget)).to.equal(300n);
    expect(await hold(bookA, ids, 'move-2', 501n)).to.deep.equal({ ok: false, reason: 'key_spend_limit', available: 500n });

    await store.recordCharges([charge(ids, 'move-1', 300n)]);
    bookB.written([charge(ids, 'move-1', 300n)]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const left = await undrained(bookB.instance);
    expect([left[ids.accountId], left[`k:${ids.keyId}`], left[field]], 'written: gone from the figures').to.deep.equal([undefined, undefined, undefined]);
    await raw!.del(`${prefix}key:${ids.keyId}`, `${prefix}budget:${field.slice(2)}`);
    expect(await bookA.budgetSpent(budget), 'reseeded from the ledger alone').to.equal(300n);
  });

  it('answers ping while Redis answers', async () => {
    expect(await bookA.ping()).to.equal(true);
  });

  it('fails closed at once when Redis refuses connections, without touching the ledger', async () => {
    const ids = await newAccount(1000n);
    const book = await openRedisBook({ ...config, url: 'redis://127.0.0.1:1' }, store);
    extraBooks.push(book);
    const started = performance.now();
    const error = await hold(book, ids, 'down-1', 1n).then(() => null, (e: unknown) => e);
    expect(error).to.be.instanceOf(BookUnavailableError);
    expect(performance.now() - started).to.be.below(COMMAND_TIMEOUT_MS + 500);
    expect(await book.ping()).to.equal(false);

    const refused = await book.credit({ accountId: ids.accountId, amount: 5n, kind: 'topup', actor: 'test', note: null }).then(() => null, (e: unknown) => e);
    expect(refused).to.be.instanceOf(BookUnavailableError);
    expect((await store.balance(ids.accountId)).balance).to.equal(1000n);
  });

  it('fails closed within the command timeout when a connected Redis stops answering', async () => {
    const ids = await newAccount(1000n);
    const silent = await silentRedis();
    try {
      const book = await openRedisBook({ ...config, url: `redis://127.0.0.1:${silent.port}` }, store);
      extraBooks.push(book);
      expect(await book.ping()).to.equal(false);
      const started = performance.now();
      const error = await hold(book, ids, 'silent-1', 1n).then(() => null, (e: unknown) => e);
      const elapsed = performance.now() - started;
      expect(error).to.be.instanceOf(BookUnavailableError);
      expect((error as Error).message).to.match(/timed out/);
      expect(elapsed).to.be.within(COMMAND_TIMEOUT_MS - 50, COMMAND_TIMEOUT_MS + 500);
    } finally {
      silent.close();
    }
  });
});

/**
 * A server that completes ioredis's handshake (CLIENT, INFO) and then never answers again: a Redis
 * whose connection is up but whose replies are lost, which only the command timeout can catch.
 */
async function silentRedis(): Promise<{ port: number; close: () => void }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString('latin1');
      for (let command = takeCommand(); command !== null; command = takeCommand()) {
        const name = command[0]?.toLowerCase();
        if (name === 'client') socket.write('+OK\r\n');
        else if (name === 'info') socket.write(bulk('# Server\r\nredis_version:7.0.0\r\nloading:0\r\n'));
      }
    });
    socket.on('error', () => undefined);

    /** One RESP array of bulk strings from the front of the buffer, or null until it is complete. */
    function takeCommand(): string[] | null {
      const header = /^\*(\d+)\r\n/.exec(buffered);
      if (header === null) return null;
      let offset = header[0].length;
      const args: string[] = [];
      for (let i = 0; i < Number(header[1]); i++) {
        const length = /^\$(\d+)\r\n/.exec(buffered.slice(offset));
        if (length === null) return null;
        const start = offset + length[0].length;
        if (buffered.length < start + Number(length[1]) + 2) return null;
        args.push(buffered.slice(start, start + Number(length[1])));
        offset = start + Number(length[1]) + 2;
      }
      buffered = buffered.slice(offset);
      return args;
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

function bulk(text: string): string {
  return `$${Buffer.byteLength(text)}\r\n${text}\r\n`;
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
