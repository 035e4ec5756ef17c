/**
 * Session budgets across two instances sharing PostgreSQL and Redis: a session that spent its budget
 * through one instance is refused on either, and twenty concurrent streams of one session spread over
 * both against a budget for three holds admit exactly three (the Redis hold script checks the session's
 * spend and holds in the same atomic step as the balance). Skipped, saying so, without the services.
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

const BODY = JSON.stringify({ model: 'gpt-priced', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'Count to three.' }] });
/** What billing holds for BODY: one input token per byte at 1,000 nano-units, 50 output tokens at 5,000. */
const HOLD = BigInt(Buffer.byteLength(BODY)) * 1000n + 50n * 5000n;
/** What each plain answer costs: 20 input tokens and 50 output tokens. */
const ANSWER_COST = 20n * 1000n + 50n * 5000n;

function sharedYaml(upstreamUrl: string, storeUrl: string, redisPrefix: string): string {
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
  upstream: { failover: { max_attempts: 1 } }
`;
}

describe('e2e: session budgets on two instances sharing PostgreSQL and Redis', function () {
  this.timeout(30_000);
  let shared: SharedInstances | null = null;
  let fake: FakeUpstream;
  let gateways: readonly Gateway[] = [];
  let store: Store;

  before(async function () {
    const started = await startSharedInstances('session-budgets', sharedYaml);
    if ('problem' in started) {
      console.log(`      ${started.problem}: shared session budgets suite skipped`);
      this.skip();
    }
    shared = started;
    ({ fake, store, gateways } = shared);
  });

  after(async () => shared?.close());

  async function fundedKey(name: string, sessionBudget: bigint): Promise<string> {
    const account = await store.createAccount({ name, role: 'user' });
    await store.credit({ accountId: account.id, amount: 1_000_000_000n, kind: 'admin', actor: 'test', note: null });
    const { key, record } = await issueApiKey(store, { accountId: account.id, name: null });
    await store.setKeyLimits(record.id, { sessionBudget });
    return key;
  }

  function post(gateway: Gateway, key: string, session: string, body = BODY): Promise<Response> {
    return fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'x-claude-code-session-id': session },
      body,
    });
  }

  it('refuses a session that spent its budget through one instance on either instance, and serves another session', async () => {
    const plain = BODY.replace('"stream":true', '"stream":false');
    const plainHold = BigInt(Buffer.byteLength(plain)) * 1000n + 50n * 5000n;
    const key = await fundedKey('shared-session-spent', ANSWER_COST + plainHold - 1n);
    fake.enqueue(chatCompletion({ inputTokens: 20, outputTokens: 50 }));
    const first = await post(gateways[0], key, 'agent-one', plain);
    expect(first.status, await first.text()).to.equal(200);
    for (const gateway of [gateways[1], gateways[0]]) {
      const refused = await post(gateway, key, 'agent-one', plain);
      expect(refused.status).to.equal(402);
      expect(((await refused.json()) as { error: { code: string } }).error.code).to.equal('session_budget_exceeded');
    }
    fake.enqueue(chatCompletion({ inputTokens: 20, outputTokens: 50 }));
    const other = await post(gateways[1], key, 'agent-two', plain);
    expect(other.status, await other.text()).to.equal(200);
  });

  it('admits exactly 3 of 20 concurrent streams of one session spread over both instances', async () => {
    const key = await fundedKey('shared-session-burst', 3n * HOLD + HOLD / 2n);
    // The admitted streams stay open until every refusal is back, so no settlement frees budget early.
    let refused = 0;
    let allRefused!: () => void;
    const refusalsBack = new Promise<void>((resolve) => (allRefused = resolve));
    for (let i = 0; i < 3; i++) fake.enqueue({ until: refusalsBack, then: chatStream({ text: 'one two three', includeUsage: true, inputTokens: 20, outputTokens: 10 }) });
    const before = fake.requests.length;
    const statuses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        post(gateways[i % 2], key, 'burst-session').then(async (res) => {
          await res.arrayBuffer();
          if (res.status !== 200 && ++refused === 17) allRefused();
          return res.status;
        }),
      ),
    );
    expect(statuses.filter((status) => status === 200), 'admitted').to.have.length(3);
    expect(statuses.filter((status) => status === 402), 'refused').to.have.length(17);
    expect(fake.requests.length - before).to.equal(3);
  });
});
