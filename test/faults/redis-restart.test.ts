/**
 * docs/ledger-faults.md#redis-comes-back: Redis killed (-9) and started again empty while PostgreSQL
 * is stalled (the account's row locked by another session for 10 s), under paid load on two instances.
 * The charges settled during the stall are in neither Redis nor the ledger when Redis comes back, only
 * in each instance's memory and outbox: each puts its figures back before any balance is reseeded, so
 * the reseed does not count them as unspent and the account is never served more than its credit.
 * Skipped, saying so, without PostgreSQL or redis-server.
 */
import { expect } from 'chai';
import { Client } from 'pg';
import { issueApiKey } from '../../src/auth/issue-key';
import { openRedisBook } from '../../src/billing/redis-book';
import { verifyLedgerCommand, verifyLiveBalances } from '../../src/cli/ledger';
import type { Gateway } from '../../src/gateway';
import type { Store } from '../../src/store/store';
import { startPairOnOwnRedis, type OwnRedisPair } from '../helpers/pair-on-own-redis';
import { redisServerProblem, type OwnRedis } from '../helpers/redis-server';
import { postgresProblem, type TestDatabase } from '../helpers/services';
import { PROVIDER_KEYS } from '../helpers/test-gateway';

const BODY = JSON.stringify({ model: 'gpt-priced', max_tokens: 20, messages: [{ role: 'user', content: 'Say something short.' }] });
const STALL_MS = 10_000;

function yaml(upstreamUrl: string, storeUrl: string, redisUrl: string, outbox: string): string {
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "${storeUrl}" }
redis: { url: "${redisUrl}", key_prefix: "restart:", command_timeout_ms: 500 }
providers:
  openai: { protocol: openai, base_url: ${upstreamUrl}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  gpt-priced: { family: openai, routes: [{ provider: openai }], price: { input: 1, output: 5 }, max_output_tokens: 20, context_window: 200000 }
plugins:
  billing: { flush_interval_ms: 10, outbox_path: "${outbox}" }
`;
}

describe('faults: Redis restarted empty during a PostgreSQL stall, two instances under paid load', function () {
  this.timeout(120_000);
  let database: TestDatabase;
  let redis: OwnRedis;
  let store: Store;
  let gateways: Gateway[];
  let rig: OwnRedisPair | undefined;

  before(async function () {
    const problem = (await postgresProblem()) ?? redisServerProblem();
    if (problem !== null) {
      console.log(`      ${problem}: suite skipped`);
      this.skip();
    }
    rig = await startPairOnOwnRedis(yaml, 'restart');
    ({ database, redis, store, gateways } = rig);
  });

  after(async () => {
    await rig?.stop();
  });

  /** `count` requests, `concurrency` at a time, alternating between the instances; their statuses. */
  async function load(key: string, count: number, concurrency = 4): Promise<number[]> {
    const statuses: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) {
          const at = gateways[next++ % 2];
          const res = await fetch(`${at.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: BODY });
          await res.arrayBuffer();
          statuses.push(res.status);
        }
      }),
    );
    return statuses;
  }

  async function ledgerBalance(accountId: string): Promise<bigint> {
    return (await store.balance(accountId)).balance;
  }

  it('never serves more than the credit, and the ledger is exact once the store is back', async () => {
    // What one request costs (the fake upstream's usage is the same for the same body), on an account of its own.
    const probe = await store.createAccount({ name: 'restart-probe', role: 'user' });
    await store.credit({ accountId: probe.id, amount: 10n ** 12n, kind: 'admin', actor: 'test', note: null });
    expect(await load((await issueApiKey(store, { accountId: probe.id, name: null })).key, 1, 1)).to.deep.equal([200]);
    await waitFor(async () => (await ledgerBalance(probe.id)) < 10n ** 12n, 'the probe charge in the ledger');
    const cost = 10n ** 12n - (await ledgerBalance(probe.id));

    // Forty requests' worth: ten before the stall, twenty during it, then the ten that are left.
    const account = await store.createAccount({ name: 'restart', role: 'user' });
    const { key } = await issueApiKey(store, { accountId: account.id, name: null });
    await store.credit({ accountId: account.id, amount: 40n * cost, kind: 'admin', actor: 'test', note: null });
    expect(new Set(await load(key, 10))).to.deep.equal(new Set([200]));
    await waitFor(async () => (await ledgerBalance(account.id)) === 30n * cost, 'the ten charges in the ledger');

    const locker = new Client({ connectionString: database.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [account.id]);
    const stalled = Date.now();
    try {
      expect(new Set(await load(key, 20)), 'served during the stall').to.deep.equal(new Set([200]));
      expect(await ledgerBalance(account.id), 'the ledger is stalled').to.equal(30n * cost);

      await redis.kill();
      await redis.restart();
      // Both instances still stalled: the live balance must be reseeded as 10 requests' worth, not 30.
      const after = await load(key, 30);
      const served = after.filter((status) => status === 200).length;
      expect(served, `served after the restart (statuses ${after.join(' ')})`).to.be.at.most(10);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, STALL_MS - (Date.now() - stalled))));
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }

    // Every request served is charged once: the credit less one cost per charge.
    let charged = 0;
    await waitFor(async () => {
      const [charges, balance] = await Promise.all([store.listCharges({ accountId: account.id, limit: 1000 }), ledgerBalance(account.id)]);
      charged = charges.length;
      return balance === 40n * cost - BigInt(charges.length) * cost;
    }, 'every charge in the ledger');
    expect(charged, 'requests charged').to.be.at.most(40);
    expect(await ledgerBalance(account.id) >= 0n, 'the ledger balance is not below zero').to.equal(true);

    const lines: string[] = [];
    expect((await verifyLedgerCommand(store, (line) => lines.push(line))).drifted, lines.join('\n')).to.equal(0);
    const book = await openRedisBook({ url: redis.url, key_prefix: 'restart:', command_timeout_ms: 2000 }, store);
    try {
      await waitFor(async () => (await verifyLiveBalances(store, book, (line) => lines.push(line))) === 0, `live balances equal to the ledger:\n${lines.join('\n')}`);
    } finally {
      await book.close();
    }
  });

  it('leaves the live balances, the outbox and the ledger equal when an instance stops under paid load', async () => {
    const account = await store.createAccount({ name: 'restart-stop', role: 'user' });
    const { key } = await issueApiKey(store, { accountId: account.id, name: null });
    await store.credit({ accountId: account.id, amount: 10n ** 12n, kind: 'admin', actor: 'test', note: null });
    const running = load(key, 200, 8).catch(() => []);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const stopping = gateways.shift()!;
    await stopping.stop(2000); // what SIGTERM runs: in-flight requests finish, the ledger is drained
    await running;

    const lines: string[] = [];
    expect((await verifyLedgerCommand(store, (line) => lines.push(line))).drifted, lines.join('\n')).to.equal(0);
    const book = await openRedisBook({ url: redis.url, key_prefix: 'restart:', command_timeout_ms: 2000 }, store);
    try {
      const said: string[] = [];
      const drifted = await verifyLiveBalances(store, book, (line) => said.push(line));
      expect(drifted, said.join('\n')).to.equal(0);
    } finally {
      await book.close();
    }
  });
});

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
