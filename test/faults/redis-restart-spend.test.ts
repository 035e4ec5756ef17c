/**
 * docs/ledger-faults.md#redis-comes-back, for spend: Redis killed (-9) and started again empty while
 * PostgreSQL is stalled (the accounts' rows locked by another session), two instances. The charges
 * settled during the stall count against a key's spend limit and an account's budget though they are
 * in neither Redis nor the ledger when Redis comes back: each instance puts back its undrained key and
 * budget figures, and the reseed adds every instance's to the ledger's spend. So after the restart
 * the key and the budget leave exactly what the charges left, and are never overspent.
 * Skipped, saying so, without PostgreSQL or redis-server.
 */
import { expect } from 'chai';
import { Client } from 'pg';
import { issueApiKey } from '../../src/auth/issue-key';
import { unitsToNano } from '../../src/billing/money';
import type { Gateway } from '../../src/gateway';
import type { Store } from '../../src/store/store';
import { startPairOnOwnRedis, type OwnRedisPair } from '../helpers/pair-on-own-redis';
import { redisServerProblem, type OwnRedis } from '../helpers/redis-server';
import { postgresProblem, type TestDatabase } from '../helpers/services';
import { PROVIDER_KEYS } from '../helpers/test-gateway';

const BODY = JSON.stringify({ model: 'gpt-priced', max_tokens: 20, messages: [{ role: 'user', content: 'Say something short.' }] });
/** The limit and the budget, in requests' worth: 10 written before the stall, 20 settled during it. */
const LIMIT = 40n;
const BEFORE = 10;
const DURING = 20;

function yaml(upstreamUrl: string, storeUrl: string, redisUrl: string, outbox: string): string {
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "${storeUrl}" }
redis: { url: "${redisUrl}", key_prefix: "spend-restart:", command_timeout_ms: 500 }
providers:
  openai: { protocol: openai, base_url: ${upstreamUrl}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  gpt-priced: { family: openai, routes: [{ provider: openai }], price: { input: 1, output: 5 }, max_output_tokens: 20, context_window: 200000 }
plugins:
  billing: { flush_interval_ms: 10, outbox_path: "${outbox}" }
`;
}

interface Reply {
  readonly status: number;
  readonly body: string;
}

describe('faults: Redis restarted empty during a PostgreSQL stall, a key limit and a budget on two instances', function () {
  this.timeout(120_000);
  let database: TestDatabase;
  let redis: OwnRedis;
  let store: Store;
  let gateways: Gateway[];
  let rig: OwnRedisPair | undefined;
  let turn = 0;

  before(async function () {
    const problem = (await postgresProblem()) ?? redisServerProblem();
    if (problem !== null) {
      console.log(`      ${problem}: suite skipped`);
      this.skip();
    }
    rig = await startPairOnOwnRedis(yaml, 'spend-restart');
    ({ database, redis, store, gateways } = rig);
  });

  after(async () => {
    await rig?.stop();
  });

  /** One request, at the instances in turn. */
  async function request(key: string): Promise<Reply> {
    const at = gateways[turn++ % 2];
    const res = await fetch(`${at.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: BODY });
    return { status: res.status, body: await res.text() };
  }

  async function served(key: string, count: number): Promise<number[]> {
    const statuses: number[] = [];
    for (let i = 0; i < count; i++) statuses.push((await request(key)).status);
    return statuses;
  }

  /**
   * Requests one at a time until one is refused with a 402: how many were served, and the refusal.
   * A 503 (the book reconnecting to the restarted Redis) is tried again.
   */
  async function untilRefused(key: string, most: number): Promise<{ served: number; refusal: Reply | null; unavailable: number }> {
    let unavailable = 0;
    for (let count = 0; count < most; ) {
      const reply = await request(key);
      if (reply.status === 503 && ++unavailable < 100) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        continue;
      }
      if (reply.status !== 200) return { served: count, refusal: reply, unavailable };
      count += 1;
    }
    return { served: most, refusal: null, unavailable };
  }

  async function ledgerBalance(accountId: string): Promise<bigint> {
    return (await store.balance(accountId)).balance;
  }

  it("counts every instance's undrained charges in the reseeded key spend and budget", async () => {
    // What one request costs (the fake upstream's usage is the same for the same body).
    const probe = await store.createAccount({ name: 'spend-probe', role: 'user' });
    await store.credit({ accountId: probe.id, amount: 10n ** 12n, kind: 'admin', actor: 'test', note: null });
    expect(await served((await issueApiKey(store, { accountId: probe.id, name: null })).key, 1)).to.deep.equal([200]);
    await waitFor(async () => (await ledgerBalance(probe.id)) < 10n ** 12n, 'the probe charge in the ledger');
    const cost = 10n ** 12n - (await ledgerBalance(probe.id));

    const limited = await store.createAccount({ name: 'spend-key-limit', role: 'user' });
    const budgeted = await store.createAccount({ name: 'spend-budget', role: 'user' });
    for (const account of [limited, budgeted]) await store.credit({ accountId: account.id, amount: 10n ** 12n, kind: 'admin', actor: 'test', note: null });
    await store.setAccountBudget(budgeted.id, { amount: LIMIT * cost, period: 'month', timezone: 'UTC' });
    const keyLimited = (await issueApiKey(store, { accountId: limited.id, name: null, spendLimit: LIMIT * cost })).key;
    const keyBudgeted = (await issueApiKey(store, { accountId: budgeted.id, name: null })).key;

    for (const key of [keyLimited, keyBudgeted]) expect(new Set(await served(key, BEFORE))).to.deep.equal(new Set([200]));
    await waitFor(async () => (await ledgerBalance(limited.id)) === 10n ** 12n - BigInt(BEFORE) * cost && (await ledgerBalance(budgeted.id)) === 10n ** 12n - BigInt(BEFORE) * cost, 'the first charges in the ledger');

    const locker = new Client({ connectionString: database.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM accounts WHERE id = ANY($1) FOR UPDATE', [[limited.id, budgeted.id]]);
    const after: Awaited<ReturnType<typeof untilRefused>>[] = [];
    try {
      // Half at each instance: both hold charges the ledger does not have when Redis goes.
      for (const key of [keyLimited, keyBudgeted]) expect(new Set(await served(key, DURING)), 'served during the stall').to.deep.equal(new Set([200]));
      expect(await ledgerBalance(limited.id), 'the ledger is stalled').to.equal(10n ** 12n - BigInt(BEFORE) * cost);

      await redis.kill();
      await redis.restart();
      // Still stalled: what the limit and the budget leave is 10 requests' worth, not the 30 the ledger alone says.
      for (const key of [keyLimited, keyBudgeted]) after.push(await untilRefused(key, 30));
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }

    const spentBy = (served: number): bigint => BigInt(BEFORE + DURING + served) * cost;
    const limits = ['the key limit', 'the budget'];
    limits.forEach((what, index) => console.log(`      ${what}: ${after[index].served} served after the restart (${after[index].unavailable} answered 503 while the book reconnected), then ${after[index].refusal?.status}`));
    for (const [index, what] of limits.entries()) {
      const { served, refusal } = after[index];
      expect(served, `${what}: served after the restart`).to.be.at.most(Number(LIMIT) - BEFORE - DURING);
      expect(refusal?.status, `${what}: refused once spent (${refusal?.body})`).to.equal(402);
      const left = /has ([0-9.]+) left/.exec(refusal!.body)?.[1];
      expect(left === undefined ? null : unitsToNano(left), `${what}: what the refusal says is left (${refusal!.body})`).to.equal(LIMIT * cost - spentBy(served));
    }
    expect(after[0].refusal!.body).to.contain('key_spend_limit_reached');
    expect(after[1].refusal!.body).to.contain('budget_exceeded');

    // Once the store is back, the ledger has exactly the charges served, within the limit and the budget.
    await waitFor(
      async () => (await ledgerBalance(limited.id)) === 10n ** 12n - spentBy(after[0].served) && (await ledgerBalance(budgeted.id)) === 10n ** 12n - spentBy(after[1].served),
      'every charge in the ledger',
    );
    const [key] = await store.listKeys({ accountId: limited.id });
    expect(key.spent, "the key's spend in the ledger").to.equal(spentBy(after[0].served));
    expect(key.spent <= LIMIT * cost, 'the key limit is not overspent').to.equal(true);
    const month = new Date();
    const start = new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth(), 1));
    const end = new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + 1, 1));
    const budgetSpent = await store.periodSpend('account', budgeted.id, start, end);
    expect(budgetSpent, "the budget's period spend in the ledger").to.equal(spentBy(after[1].served));
    expect(budgetSpent <= LIMIT * cost, 'the budget is not overspent').to.equal(true);
  });
});

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
