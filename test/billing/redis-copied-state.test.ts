/**
 * docs/scaling-out.md#redis-sentinel: the copied-state rule. A replica promoted by a failover holds
 * the state as it was some writes ago; here a second redis-server copies the first one's state
 * (REPLICAOF, then REPLICAOF NO ONE), the first goes on settling, and the book's connection is moved
 * to the copy (a TCP switch in front of both, as a failover moves it). The copy's balance has not
 * taken the later settlements: held against, it would serve them again. The book finds the state
 * copied on its new connection, drops the live money, re-asserts its figures and reseeds from the
 * ledger. Two redis-servers of the test's own; skipped, saying so, without redis-server.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { BookUnavailableError } from '../../src/billing/book';
import { EPOCH_CHECK_MS } from '../../src/billing/redis-epoch';
import { openRedisBook, type RedisBook } from '../../src/billing/redis-book';
import { SqliteStore } from '../../src/store/sqlite';
import type { ChargeRecord } from '../../src/store/store';
import { PLAIN_CHARGE } from '../helpers/charges';
import { redisServerProblem, startOwnRedis, type OwnRedis } from '../helpers/redis-server';

const PREFIX = 'copied:';
const COST = 100n;

describe('billing: a Redis state copied from another server (a promoted replica)', function () {
  this.timeout(60_000);
  let primary: OwnRedis;
  let replica: OwnRedis;
  let toPrimary: Redis;
  let toReplica: Redis;
  let store: SqliteStore;
  let tcpSwitch: TcpSwitch;
  const books: RedisBook[] = [];

  before(async function () {
    const problem = redisServerProblem();
    if (problem !== null) {
      console.log(`      ${problem}: suite skipped`);
      this.skip();
    }
    [primary, replica] = [await startOwnRedis(), await startOwnRedis()];
    toPrimary = new Redis(primary.url);
    toReplica = new Redis(replica.url);
    store = new SqliteStore(':memory:');
    await store.migrate();
    tcpSwitch = await startTcpSwitch(primary.port);
  });

  after(async () => {
    for (const book of books) await book.close();
    tcpSwitch?.close();
    toPrimary?.disconnect();
    toReplica?.disconnect();
    await store?.close();
    await primary?.close();
    await replica?.close();
  });

  async function newAccount(credit: bigint): Promise<{ accountId: string; keyId: string }> {
    const account = await store.createAccount({ name: `copied-${randomBytes(3).toString('hex')}`, role: 'user' });
    const key = await store.createKey({ accountId: account.id, name: null, hash: randomBytes(32), prefix: 'sk-test', last4: 'abcd', spendLimit: null });
    await store.credit({ accountId: account.id, amount: credit, kind: 'admin', actor: 'test', note: null });
    return { accountId: account.id, keyId: key.id };
  }

  /**
   * A request held and settled at COST: taken from the live balance, not yet in the ledger (no writer
   * here). A hold the book cannot decide (Redis unavailable: a 503) is tried again; a served request
   * whose settlement fails is served all the same (its charge is on its way to the ledger).
   */
  async function serve(book: RedisBook, ids: { accountId: string; keyId: string }): Promise<boolean> {
    const requestId = `req-${randomBytes(6).toString('hex')}`;
    for (;;) {
      try {
        const held = await book.hold({ requestId, ...ids, amount: COST, expiresAt: new Date(Date.now() + 60_000) });
        if (!held.ok) return false;
        break;
      } catch (error) {
        if (!(error instanceof BookUnavailableError)) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    await book.settle(charge(ids, requestId)).catch((error: unknown) => {
      if (!(error instanceof BookUnavailableError)) throw error;
    });
    return true;
  }

  it('drops the live money found on a copy and reseeds it from the ledger less the undrained figures', async () => {
    const notices: string[] = [];
    const book = await openRedisBook({ url: tcpSwitch.url, key_prefix: PREFIX, command_timeout_ms: 2000 }, store, { onError: (error) => notices.push(error.message) });
    books.push(book);
    const ids = await newAccount(10n * COST);
    for (let i = 0; i < 3; i++) expect(await serve(book, ids), `request ${i + 1}`).to.equal(true);

    // The replica copies the primary's state, then is cut off from it (promoted, as Sentinel does).
    await toReplica.replicaof('127.0.0.1', String(primary.port));
    await waitFor(async () => (await toReplica.info('replication')).includes('master_link_status:up'), 'the replica in sync');
    await waitFor(async () => (await toReplica.hget(`${PREFIX}account:${ids.accountId}`, 'balance')) === String(7n * COST), 'the copy');
    await toReplica.replicaof('NO', 'ONE');
    // Four more settled on the primary only: the copy's balance still has them.
    for (let i = 0; i < 4; i++) expect(await serve(book, ids), `request ${i + 4}`).to.equal(true);
    expect(await toReplica.hget(`${PREFIX}account:${ids.accountId}`, 'balance'), 'the copy is stale').to.equal(String(7n * COST));

    // The failover: the book's connection now reaches the copy.
    tcpSwitch.to(replica.port);
    // Three requests are left of the credit (ten, seven served, none in the ledger yet), not seven.
    const outcomes: boolean[] = [];
    for (let i = 0; i < 7; i++) outcomes.push(await serve(book, ids));
    expect(outcomes.filter(Boolean), `served after the failover: ${outcomes.join(' ')}`).to.have.length(3);
    expect(await book.balance(ids.accountId)).to.deep.equal({ balance: 0n, held: 0n });
    expect(notices.join('\n')).to.match(/copied from another server .*dropped \d+ live balance/);
    const epoch = await toReplica.hgetall(`${PREFIX}epoch`);
    expect(epoch.run_id, 'the epoch names the server it stands on').to.match(/^[0-9a-f]{40}$/);
    expect((await toReplica.info('server')).includes(`run_id:${epoch.run_id}`)).to.equal(true);
  });

  it('checks the server of a new connection before any script there, even with a look under way on the old one', async () => {
    // Goes on from the first case: the book is on the promoted copy, which a third server now copies.
    const book = books[0];
    const ids = await newAccount(10n * COST);
    for (let i = 0; i < 3; i++) expect(await serve(book, ids), `request ${i + 1}`).to.equal(true);
    const third = await startOwnRedis();
    const toThird = new Redis(third.url);
    try {
      await toThird.replicaof('127.0.0.1', String(replica.port));
      await waitFor(async () => (await toThird.hget(`${PREFIX}account:${ids.accountId}`, 'balance')) === String(7n * COST), 'the copy');
      await toThird.replicaof('NO', 'ONE');
      for (let i = 0; i < 4; i++) expect(await serve(book, ids), `request ${i + 4}`).to.equal(true);
      // The old server stops answering long enough for the periodic look to be under way, unanswered,
      // when the connection moves: the look a reconnect starts is that one, whose answer never comes.
      tcpSwitch.pause();
      await new Promise((resolve) => setTimeout(resolve, EPOCH_CHECK_MS * 1.5));
      tcpSwitch.to(third.port);
      const outcomes: boolean[] = [];
      for (let i = 0; i < 7; i++) outcomes.push(await serve(book, ids));
      expect(outcomes.filter(Boolean), `served after the failover: ${outcomes.join(' ')}`).to.have.length(3);
    } finally {
      toThird.disconnect();
      await third.close();
    }
  });

  it('takes an epoch made before servers were recorded as its own, dropping nothing', async () => {
    const prefix = 'copied-old:';
    const notices: string[] = [];
    const book = await openRedisBook({ url: primary.url, key_prefix: prefix, command_timeout_ms: 2000 }, store, { onError: (error) => notices.push(error.message) });
    books.push(book);
    const ids = await newAccount(10n * COST);
    expect(await serve(book, ids)).to.equal(true);
    await toPrimary.hdel(`${prefix}epoch`, 'run_id');
    await waitFor(async () => (await toPrimary.hget(`${prefix}epoch`, 'run_id')) !== null, 'the epoch to name its server');
    expect(notices, 'nothing dropped').to.deep.equal([]);
    expect(await book.balance(ids.accountId)).to.deep.equal({ balance: 9n * COST, held: 0n });
  });
});

function charge(ids: { accountId: string; keyId: string }, requestId: string): ChargeRecord {
  return {
    requestId, ...ids, model: 'm-test', provider: 'mock', endpoint: 'chat', inputTokens: 100, cacheWriteTokens: 0, cacheWrite1hTokens: 0,
    cacheReadTokens: 0, outputTokens: 50, imageInputTokens: 0, imageOutputTokens: 0, cost: COST, ...PLAIN_CHARGE, usageSource: 'upstream', status: 200,
    outcome: 'delivered', latencyMs: 5, createdAt: new Date(),
  };
}

interface TcpSwitch {
  readonly url: string;
  /** Sends new connections to `port` and cuts the open ones, as a failover does; ends a pause. */
  to(port: number): void;
  /** Drops what clients send from now on: a server that stops answering. */
  pause(): void;
  close(): void;
}

/** A TCP relay in front of one redis-server at a time. */
async function startTcpSwitch(port: number): Promise<TcpSwitch> {
  let target = port;
  let paused = false;
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target, '127.0.0.1');
    open.add(client).add(upstream);
    client.on('data', (chunk) => paused || upstream.write(chunk));
    upstream.pipe(client);
    for (const socket of [client, upstream]) {
      socket.on('error', () => undefined);
      socket.on('close', () => {
        open.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `redis://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    to(next) {
      target = next;
      paused = false;
      for (const socket of open) socket.destroy();
    },
    pause() {
      paused = true;
    },
    close() {
      for (const socket of open) socket.destroy();
      server.close();
    },
  };
}

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
