/**
 * docs/scaling-out.md#redis-cluster: two gateway instances on one PostgreSQL database and a Redis
 * Cluster of the test's own (three primaries, a replica each), under paid load. Once the primary that
 * holds the balance book's slot is killed (-9): its replica is promoted, the instances follow it on
 * their own, no request is refused for longer than the promotion, the account is never served more
 * than its credit, and once settled the ledger is exact and `verify` clean. Once the account's book
 * slot is migrated to another primary, key by key (MIGRATING/IMPORTING, MIGRATE): the same. And paid
 * traffic for many accounts is carried by every primary, not one. Skipped, saying so, without
 * PostgreSQL, redis-server or redis-cli.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import { issueApiKey } from '../../src/auth/issue-key';
import { Redis } from 'ioredis';
import { bookLayout } from '../../src/billing/book-layout';
import { openRedisBook } from '../../src/billing/redis-book';
import { verifyLedgerCommand, verifyLiveBalances } from '../../src/cli/ledger';
import { parseConfig } from '../../src/config/load';
import { startGateway, type Gateway } from '../../src/gateway';
import { openStore } from '../../src/store/open';
import type { Store } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { CLUSTER_PROMOTION_BOUND_MS, redisClusterProblem, startOwnCluster, type OwnCluster } from '../helpers/redis-cluster';
import { createTestDatabase, postgresProblem, type TestDatabase } from '../helpers/services';
import { PROVIDER_KEYS } from '../helpers/test-gateway';

const BODY = JSON.stringify({ model: 'gpt-priced', max_tokens: 20, messages: [{ role: 'user', content: 'Say something short.' }] });
const PREFIX = 'cluster:';
/** Where the book keeps an account on a Cluster: its group's slot is the one moved or failed over. */
const LAYOUT = bookLayout(PREFIX, true);
/** Requests the account's credit pays for: more than the load serves before the fault. */
const CREDIT_REQUESTS = 150n;

function yaml(upstreamUrl: string, storeUrl: string, cluster: OwnCluster, outbox: string): string {
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "${storeUrl}" }
redis: { cluster: [${cluster.seeds.map((address) => `"${address}"`).join(', ')}], key_prefix: "${PREFIX}", command_timeout_ms: 500 }
providers:
  openai: { protocol: openai, base_url: ${upstreamUrl}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  gpt-priced: { family: openai, routes: [{ provider: openai }], price: { input: 1, output: 5 }, max_output_tokens: 20, context_window: 200000 }
plugins:
  billing: { flush_interval_ms: 10, outbox_path: "${outbox}" }
`;
}

interface Outcome {
  readonly status: number;
  readonly startedAt: number;
  readonly endedAt: number;
}

describe('faults: a Redis Cluster under paid load on two instances', function () {
  this.timeout(240_000);
  let database: TestDatabase;
  let cluster: OwnCluster;
  let fake: FakeUpstream;
  let store: Store;
  let gateways: Gateway[] = [];
  let folder: string;
  let cost: bigint;

  before(async function () {
    const problem = (await postgresProblem()) ?? redisClusterProblem();
    if (problem !== null) {
      console.log(`      ${problem}: suite skipped`);
      this.skip();
    }
    database = await createTestDatabase();
    cluster = await startOwnCluster();
    fake = await startFakeUpstream();
    folder = mkdtempSync(path.join(tmpdir(), 'tollgate-cluster-'));
    for (const name of ['a', 'b']) {
      const config = parseConfig(yaml(fake.url, database.url, cluster, path.join(folder, name)), 'cluster.yaml', {});
      gateways.push(await startGateway({ config, port: 0, logger: pino({ level: 'silent' }) }));
    }
    store = openStore({ url: database.url });
    const probe = await store.createAccount({ name: 'cluster-probe', role: 'user' });
    await store.credit({ accountId: probe.id, amount: 10n ** 12n, kind: 'admin', actor: 'test', note: null });
    expect((await request((await issueApiKey(store, { accountId: probe.id, name: null })).key, gateways[0])).status).to.equal(200);
    await waitFor(async () => (await ledgerBalance(probe.id)) < 10n ** 12n, 'the probe charge in the ledger');
    cost = 10n ** 12n - (await ledgerBalance(probe.id));
  });

  after(async () => {
    for (const gateway of gateways) await gateway.stop(200);
    gateways = [];
    await store?.close();
    await fake?.close();
    await cluster?.close();
    await database?.drop();
    if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
  });

  async function request(key: string, at: Gateway): Promise<Outcome> {
    const startedAt = performance.now();
    const res = await fetch(`${at.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: BODY });
    await res.arrayBuffer();
    return { status: res.status, startedAt, endedAt: performance.now() };
  }

  async function ledgerBalance(accountId: string): Promise<bigint> {
    return (await store.balance(accountId)).balance;
  }

  /**
   * Four clients, each a request every 50 ms or so, alternating between the instances; `fault` runs
   * once twenty are served and answers when it is over; the load goes on until the credit is spent
   * after it (or a bound has long passed). Then: nothing but 200, 402 and 503; no more served than
   * the credit pays for; every one charged once; `verify` clean and the live balances the ledger's.
   */
  async function underLoad(name: string, fault: (slot: number) => Promise<void>): Promise<{ outcomes: Outcome[]; faultAt: number; overAt: number }> {
    const account = await store.createAccount({ name, role: 'user' });
    const { key } = await issueApiKey(store, { accountId: account.id, name: null });
    await store.credit({ accountId: account.id, amount: CREDIT_REQUESTS * cost, kind: 'admin', actor: 'test', note: null });
    const slot = await cluster.slotOf(LAYOUT.groupOf(account.id).account(account.id));
    const outcomes: Outcome[] = [];
    let overAt = Number.POSITIVE_INFINITY;
    let stop = false;
    let next = 0;
    const clients = Promise.all(
      Array.from({ length: 4 }, async () => {
        while (!stop) {
          const outcome = await request(key, gateways[next++ % 2]);
          outcomes.push(outcome);
          if (outcome.status === 402 && outcome.startedAt > overAt) stop = true;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }),
    );
    await waitFor(async () => outcomes.filter((outcome) => outcome.status === 200).length >= 20, 'twenty requests served before the fault');
    const faultAt = performance.now();
    await fault(slot);
    overAt = performance.now();
    const giveUp = setTimeout(() => (stop = true), CLUSTER_PROMOTION_BOUND_MS + 30_000);
    await clients;
    clearTimeout(giveUp);

    const statuses = new Set(outcomes.map((outcome) => outcome.status));
    expect([...statuses].every((status) => [200, 402, 503].includes(status)), `statuses ${[...statuses].join(' ')}`).to.equal(true);
    expect(outcomes.some((outcome) => outcome.status === 200 && outcome.startedAt > overAt), 'served after the fault').to.equal(true);
    const served = outcomes.filter((outcome) => outcome.status === 200).length;
    expect(served, 'requests served').to.be.at.most(Number(CREDIT_REQUESTS));
    await waitFor(async () => (await store.listCharges({ accountId: account.id, limit: 1000 })).length === served, 'every charge in the ledger');
    expect(await ledgerBalance(account.id)).to.equal((CREDIT_REQUESTS - BigInt(served)) * cost);

    const lines: string[] = [];
    expect((await verifyLedgerCommand(store, (line) => lines.push(line))).drifted, lines.join('\n')).to.equal(0);
    const book = await openRedisBook({ url: '', cluster: cluster.seeds, key_prefix: PREFIX, command_timeout_ms: 2000 }, store);
    try {
      expect(await book.ping(), "the book's primary answers").to.equal(true);
      await waitFor(async () => (await verifyLiveBalances(store, book, (line) => lines.push(line))) === 0, `live balances equal to the ledger:\n${lines.join('\n')}`);
    } finally {
      await book.close();
    }
    return { outcomes, faultAt, overAt };
  }

  it('carries paid traffic for many accounts on every primary, each account in one slot', async () => {
    const accounts = await Promise.all(
      Array.from({ length: 24 }, async (_, index) => {
        const account = await store.createAccount({ name: `cluster-spread-${index}`, role: 'user' });
        await store.credit({ accountId: account.id, amount: 10n * cost, kind: 'admin', actor: 'test', note: null });
        return { account, key: (await issueApiKey(store, { accountId: account.id, name: null })).key };
      }),
    );
    const primaries = (await cluster.nodes()).filter((node) => node.role === 'master');
    const scriptsBefore = await Promise.all(primaries.map((node) => scriptsRun(node.port)));
    for (let round = 0; round < 2; round++) {
      const outcomes = await Promise.all(accounts.map(({ key }, index) => request(key, gateways[(index + round) % 2])));
      expect(outcomes.map((outcome) => outcome.status)).to.deep.equal(accounts.map(() => 200));
    }
    const scripts = (await Promise.all(primaries.map((node) => scriptsRun(node.port)))).map((after, index) => after - scriptsBefore[index]);
    const balances = await Promise.all(primaries.map((node) => keysOn(node.port, LAYOUT.pattern('account:'))));
    const spread = accounts.map(({ account }) => primaries.findIndex((_, index) => balances[index].includes(LAYOUT.groupOf(account.id).account(account.id))));
    console.log(`      balances per primary: ${primaries.map((_, index) => spread.filter((at) => at === index).length).join(' / ')}; scripts run per primary: ${scripts.join(' / ')}`);
    expect(spread.every((at) => at >= 0), 'every balance on a primary').to.equal(true);
    expect(new Set(spread).size, 'primaries carrying balances').to.be.above(1);
    expect(scripts.filter((count) => count > 0).length, 'primaries running book scripts').to.be.above(1);
    for (const { account } of accounts) {
      await waitFor(async () => (await ledgerBalance(account.id)) === 8n * cost, `${account.name} charged twice in the ledger`);
    }
    const lines: string[] = [];
    expect((await verifyLedgerCommand(store, (line) => lines.push(line))).drifted, lines.join('\n')).to.equal(0);
  });

  it("promotes the book primary's replica, refuses for no longer than the promotion, never overspends, and leaves the ledger exact", async () => {
    let old = 0;
    const { outcomes, faultAt, overAt } = await underLoad('cluster-failover', async (slot) => {
      old = (await cluster.primaryOf(slot)).port;
      await cluster.kill(old);
      expect(await cluster.promoted(slot, old, CLUSTER_PROMOTION_BOUND_MS)).to.not.equal(old);
    });
    const refused = outcomes.filter((outcome) => outcome.status === 503);
    const refusedForMs = refused.length === 0 ? 0 : Math.max(...refused.map((outcome) => outcome.endedAt)) - faultAt;
    console.log(`      promoted after ${Math.round(overAt - faultAt)} ms; ${refused.length} requests refused (503), the last ${Math.round(refusedForMs)} ms after the kill; ${outcomes.length} requests in all`);
    expect(refusedForMs, 'the refusals end within the promotion bound').to.be.below(CLUSTER_PROMOTION_BOUND_MS);
  });

  it("moves the account's book slot to another primary key by key under load, and leaves the ledger exact", async () => {
    let moved = 0;
    const { outcomes, faultAt, overAt } = await underLoad('cluster-migration', async (slot) => {
      moved = slot;
      const from = await cluster.primaryOf(slot);
      const to = (await cluster.nodes()).find((node) => node.role === 'master' && node.id !== from.id);
      if (to === undefined) throw new Error('no other primary');
      await cluster.migrateSlot(slot, to.port);
      expect((await cluster.primaryOf(slot)).port).to.equal(to.port);
    });
    const refused = outcomes.filter((outcome) => outcome.status === 503).length;
    console.log(`      slot ${moved} moved in ${Math.round(overAt - faultAt)} ms; ${refused} requests refused (503); ${outcomes.length} requests in all`);
  });
});

/** EVALSHA and EVAL calls the server has run so far (INFO commandstats). */
async function scriptsRun(port: number): Promise<number> {
  const stats = await onServer(port, (redis) => redis.info('commandstats'));
  return [...stats.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
}

/** The keys matching `pattern` on one server. */
function keysOn(port: number, pattern: string): Promise<string[]> {
  return onServer(port, async (redis) => {
    const found: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      cursor = next;
      found.push(...batch);
    } while (cursor !== '0');
    return found;
  });
}

async function onServer<T>(port: number, work: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await work(redis);
  } finally {
    redis.disconnect();
  }
}

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
