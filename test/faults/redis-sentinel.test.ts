/**
 * docs/scaling-out.md#redis-sentinel: two gateway instances on one PostgreSQL database and a Redis
 * Sentinel deployment of the test's own (a primary, two replicas, three Sentinels), under paid load;
 * the primary is killed (-9). The Sentinels promote a replica within their bound, the instances
 * follow it on their own, no request is refused for longer than that, the account is never served
 * more than its credit, and once settled the ledger is exact and `verify` clean. Skipped, saying so,
 * without PostgreSQL or redis-server.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import { issueApiKey } from '../../src/auth/issue-key';
import { openRedisBook } from '../../src/billing/redis-book';
import { verifyLedgerCommand, verifyLiveBalances } from '../../src/cli/ledger';
import { parseConfig } from '../../src/config/load';
import { startGateway, type Gateway } from '../../src/gateway';
import { openStore } from '../../src/store/open';
import type { Store } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { PROMOTION_BOUND_MS, redisSentinelProblem, startOwnSentinels, type OwnSentinels } from '../helpers/redis-sentinel';
import { createTestDatabase, postgresProblem, type TestDatabase } from '../helpers/services';
import { PROVIDER_KEYS } from '../helpers/test-gateway';

const BODY = JSON.stringify({ model: 'gpt-priced', max_tokens: 20, messages: [{ role: 'user', content: 'Say something short.' }] });
const PREFIX = 'sentinel:';
/** Requests the account's credit pays for: more than the load serves before the kill. */
const CREDIT_REQUESTS = 150n;

function yaml(upstreamUrl: string, storeUrl: string, deployment: OwnSentinels, outbox: string): string {
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "${storeUrl}" }
redis: { sentinels: [${deployment.sentinels.map((address) => `"${address}"`).join(', ')}], name: ${deployment.name}, key_prefix: "${PREFIX}", command_timeout_ms: 500 }
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

describe('faults: the Redis primary killed (-9) under a Sentinel deployment, two instances under paid load', function () {
  this.timeout(180_000);
  let database: TestDatabase;
  let deployment: OwnSentinels;
  let fake: FakeUpstream;
  let store: Store;
  let gateways: Gateway[] = [];
  let folder: string;

  before(async function () {
    const problem = (await postgresProblem()) ?? redisSentinelProblem();
    if (problem !== null) {
      console.log(`      ${problem}: suite skipped`);
      this.skip();
    }
    database = await createTestDatabase();
    deployment = await startOwnSentinels();
    fake = await startFakeUpstream();
    folder = mkdtempSync(path.join(tmpdir(), 'tollgate-sentinel-'));
    for (const name of ['a', 'b']) {
      const config = parseConfig(yaml(fake.url, database.url, deployment, path.join(folder, name)), 'sentinel.yaml', {});
      gateways.push(await startGateway({ config, port: 0, logger: pino({ level: 'silent' }) }));
    }
    store = openStore({ url: database.url });
  });

  after(async () => {
    for (const gateway of gateways) await gateway.stop(200);
    gateways = [];
    await store?.close();
    await fake?.close();
    await deployment?.close();
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

  it('promotes a replica, refuses for no longer than the promotion, never overspends, and leaves the ledger exact', async () => {
    const probe = await store.createAccount({ name: 'sentinel-probe', role: 'user' });
    await store.credit({ accountId: probe.id, amount: 10n ** 12n, kind: 'admin', actor: 'test', note: null });
    expect((await request((await issueApiKey(store, { accountId: probe.id, name: null })).key, gateways[0])).status).to.equal(200);
    await waitFor(async () => (await ledgerBalance(probe.id)) < 10n ** 12n, 'the probe charge in the ledger');
    const cost = 10n ** 12n - (await ledgerBalance(probe.id));

    const account = await store.createAccount({ name: 'sentinel', role: 'user' });
    const { key } = await issueApiKey(store, { accountId: account.id, name: null });
    await store.credit({ accountId: account.id, amount: CREDIT_REQUESTS * cost, kind: 'admin', actor: 'test', note: null });

    // Four clients, each a request every 50 ms or so, alternating between the instances, until the
    // credit is spent after the failover (or the bound has long passed).
    const outcomes: Outcome[] = [];
    let promotedAt = Number.POSITIVE_INFINITY;
    let stop = false;
    let next = 0;
    const clients = Promise.all(
      Array.from({ length: 4 }, async () => {
        while (!stop) {
          const outcome = await request(key, gateways[next++ % 2]);
          outcomes.push(outcome);
          if (outcome.status === 402 && outcome.startedAt > promotedAt) stop = true;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }),
    );
    await waitFor(async () => outcomes.filter((outcome) => outcome.status === 200).length >= 20, 'twenty requests served before the kill');
    const old = await deployment.killPrimary();
    const killedAt = performance.now();
    const promoted = await deployment.promoted(old, PROMOTION_BOUND_MS);
    promotedAt = performance.now();
    const giveUp = setTimeout(() => (stop = true), PROMOTION_BOUND_MS + 30_000);
    await clients;
    clearTimeout(giveUp);
    expect(promoted).to.not.equal(old);

    const statuses = new Set(outcomes.map((outcome) => outcome.status));
    expect([...statuses].every((status) => [200, 402, 503].includes(status)), `statuses ${[...statuses].join(' ')}`).to.equal(true);
    const refused = outcomes.filter((outcome) => outcome.status === 503);
    const refusedForMs = refused.length === 0 ? 0 : Math.max(...refused.map((outcome) => outcome.endedAt)) - killedAt;
    const promotionMs = promotedAt - killedAt;
    console.log(`      promoted after ${Math.round(promotionMs)} ms; ${refused.length} requests refused (503), the last ${Math.round(refusedForMs)} ms after the kill; ${outcomes.length} requests in all`);
    expect(refusedForMs, 'the refusals end within the promotion bound').to.be.below(PROMOTION_BOUND_MS);
    expect(outcomes.some((outcome) => outcome.status === 200 && outcome.startedAt > promotedAt), 'served after the promotion').to.equal(true);

    // Every request served is charged once, and no more are served than the credit pays for.
    const served = outcomes.filter((outcome) => outcome.status === 200).length;
    expect(served, 'requests served').to.be.at.most(Number(CREDIT_REQUESTS));
    await waitFor(async () => (await store.listCharges({ accountId: account.id, limit: 1000 })).length === served, 'every charge in the ledger');
    expect(await ledgerBalance(account.id)).to.equal((CREDIT_REQUESTS - BigInt(served)) * cost);

    const lines: string[] = [];
    expect((await verifyLedgerCommand(store, (line) => lines.push(line))).drifted, lines.join('\n')).to.equal(0);
    const book = await openRedisBook({ url: '', sentinels: deployment.sentinels, name: deployment.name, key_prefix: PREFIX, command_timeout_ms: 2000 }, store);
    try {
      await waitFor(async () => (await verifyLiveBalances(store, book, (line) => lines.push(line))) === 0, `live balances equal to the ledger:\n${lines.join('\n')}`);
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
