/**
 * Budgets across two instances sharing PostgreSQL and Redis: the Redis book's hold script checks the
 * period spend in the same atomic step as the balance, so twenty concurrent streams spread over both
 * instances against a budget for three holds admit exactly three. Skipped, saying so, without the services.
 */
import { expect } from 'chai';
import { issueApiKey } from '../../src/auth/issue-key';
import type { Gateway } from '../../src/gateway';
import type { Store } from '../../src/store/store';
import type { FakeUpstream } from '../helpers/fake-upstream';
import { REDIS_URL } from '../helpers/services';
import { startSharedInstances, type SharedInstances } from '../helpers/shared-instances';
import { PROVIDER_KEYS } from '../helpers/test-gateway';
import { chatCompletion, chatStream } from '../helpers/upstream-replies';
import { startAlertReceiver, type AlertReceiver } from '../helpers/alert-receiver';
import { PLAIN_CHARGE } from '../helpers/charges';

const BODY = JSON.stringify({ model: 'gpt-priced', max_tokens: 1000, stream: true, messages: [{ role: 'user', content: 'Count to three.' }] });
/** What billing holds for BODY: one input token per byte at 1,000 nano-units, 1,000 output tokens at 5,000. */
const HOLD = BigInt(Buffer.byteLength(BODY)) * 1000n + 1000n * 5000n;

function sharedYaml(upstreamUrl: string, storeUrl: string, redisPrefix: string, webhookUrl: string): string {
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "${storeUrl}" }
redis: { url: "${REDIS_URL}", key_prefix: "${redisPrefix}" }
providers:
  openai: { protocol: openai, base_url: ${upstreamUrl}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  gpt-priced: { family: openai, routes: [{ provider: openai }], price: { input: 1, output: 5 }, max_output_tokens: 1000, context_window: 200000 }
plugins:
  billing: { flush_interval_ms: 10 }
alerts:
  webhook: { url: "${webhookUrl}", secret: "shared-secret" }
`;
}

describe('e2e: budgets on two instances sharing PostgreSQL and Redis', function () {
  this.timeout(30_000);
  let shared: SharedInstances | null = null;
  let fake: FakeUpstream;
  let gateways: readonly Gateway[] = [];
  let store: Store;
  let receiver: AlertReceiver;

  before(async function () {
    receiver = await startAlertReceiver();
    const started = await startSharedInstances('budgets', (upstream, database, prefix) => sharedYaml(upstream, database, prefix, receiver.url));
    if ('problem' in started) {
      console.log(`      ${started.problem}: shared budgets suite skipped`);
      this.skip();
    }
    shared = started;
    ({ fake, store, gateways } = shared);
  });

  after(async () => {
    await shared?.close();
    await receiver?.close();
  });

  async function streams(key: string, count: number, admitted: number): Promise<number[]> {
    // The admitted streams stay open until every refusal is back, so no settlement frees budget early.
    let refused = 0;
    let allRefused!: () => void;
    const refusalsBack = new Promise<void>((resolve) => (allRefused = resolve));
    for (let i = 0; i < admitted; i++) fake.enqueue({ until: refusalsBack, then: chatStream({ text: 'one two three', includeUsage: true, inputTokens: 20, outputTokens: 10 }) });
    return Promise.all(
      Array.from({ length: count }, (_, i) =>
        fetch(`${gateways[i % 2].url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: BODY }).then(async (res) => {
          await res.arrayBuffer();
          if (res.status !== 200 && ++refused === count - admitted) allRefused();
          return res.status;
        }),
      ),
    );
  }

  it("admits exactly 3 of 20 concurrent streams against a key's daily budget for 3 holds, across both instances", async () => {
    const account = await store.createAccount({ name: 'shared-key-budget', role: 'user' });
    await store.credit({ accountId: account.id, amount: 1_000_000_000n, kind: 'admin', actor: 'test', note: null });
    const { key, record } = await issueApiKey(store, { accountId: account.id, name: null, budget: { amount: 3n * HOLD + HOLD / 2n, period: 'day', timezone: 'Europe/Berlin' } });
    expect(record.budget?.period).to.equal('day');
    const before = fake.requests.length;
    const statuses = await streams(key, 20, 3);
    expect(statuses.filter((status) => status === 200), 'admitted').to.have.length(3);
    expect(statuses.filter((status) => status === 402), 'refused').to.have.length(17);
    expect(fake.requests.length - before).to.equal(3);
  });

  it("admits exactly 3 of 20 against an account's monthly budget, with its keys' spend this month counted", async () => {
    const account = await store.createAccount({ name: 'shared-account-budget', role: 'user' });
    await store.credit({ accountId: account.id, amount: 1_000_000_000n, kind: 'admin', actor: 'test', note: null });
    await store.setAccountBudget(account.id, { amount: 4n * HOLD + HOLD / 2n, period: 'month', timezone: 'UTC' });
    const { key } = await issueApiKey(store, { accountId: account.id, name: null });
    // One hold's worth spent this month already, in the ledger.
    const earlier = await issueApiKey(store, { accountId: account.id, name: null });
    await store.recordCharges([
      {
        requestId: 'req_budget_earlier', accountId: account.id, keyId: earlier.record.id, model: 'gpt-priced', provider: 'openai',
        endpoint: 'chat', inputTokens: 1, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 1, imageInputTokens: 0, imageOutputTokens: 0, cost: HOLD,
        ...PLAIN_CHARGE, usageSource: 'upstream', status: 200, outcome: 'delivered', latencyMs: 1, createdAt: new Date(),
      },
    ]);
    const statuses = await streams(key, 20, 3);
    expect(statuses.filter((status) => status === 200), 'admitted').to.have.length(3);
  });

  it('fires the 80% alert once while requests on both instances cross it', async () => {
    const account = await store.createAccount({ name: 'shared-alerts', role: 'user' });
    await store.credit({ accountId: account.id, amount: 1_000_000_000n, kind: 'admin', actor: 'test', note: null });
    // Each answer costs 270,000 (20 input tokens at 1,000, 50 output at 5,000) and holds 332,000 (its 82
    // bytes as input, 50 output): 80% of 4,000,000 is 12 answers, and 14 fit (12 answers and two holds).
    const { key } = await issueApiKey(store, { accountId: account.id, name: null, budget: { amount: 4_000_000n, period: 'month', timezone: 'Asia/Tokyo' } });
    const small = JSON.stringify({ model: 'gpt-priced', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
    const before = receiver.deliveries.length;
    for (let round = 0; round < 7; round++) {
      // Two at once, one on each instance.
      for (let i = 0; i < 2; i++) fake.enqueue(chatCompletion({ text: 'ok', inputTokens: 20, outputTokens: 50 }));
      const statuses = await Promise.all(
        gateways.map((gateway) =>
          fetch(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: small }).then(async (res) => {
            await res.arrayBuffer();
            return res.status;
          }),
        ),
      );
      expect(statuses).to.deep.equal([200, 200]);
    }
    await receiver.received(before + 1);
    // Every later charge on either instance had its chance to fire it again.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const alerts = await store.listAlerts({ accountId: account.id });
    expect(alerts.map((alert) => JSON.parse(alert.body).threshold_percent)).to.deep.equal([80]);
    const deliveries = receiver.deliveries.slice(before);
    expect(deliveries).to.have.length(1);
    expect(deliveries[0].headers['x-tollgate-event-id']).to.equal(alerts[0].id);
  });
});
