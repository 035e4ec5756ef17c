/**
 * Two gateway instances sharing one PostgreSQL ledger and one Redis book: a balance that pays for
 * exactly three holds admits exactly three of fifty concurrent requests spread over both instances,
 * no balance goes negative, and the ledger reconciles. Skipped, saying so, without the services.
 */
import { expect } from 'chai';
import { issueApiKey } from '../../src/auth/issue-key';
import type { Gateway } from '../../src/gateway';
import type { Store } from '../../src/store/store';
import type { FakeUpstream } from '../helpers/fake-upstream';
import { REDIS_URL } from '../helpers/services';
import { startSharedInstances, type SharedInstances } from '../helpers/shared-instances';
import { PROVIDER_KEYS } from '../helpers/test-gateway';
import { chatCompletion } from '../helpers/upstream-replies';

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
`;
}

describe('e2e: two instances sharing PostgreSQL and Redis', function () {
  this.timeout(30_000);
  let shared: SharedInstances | null = null;
  let fake: FakeUpstream;
  let gateways: readonly Gateway[] = [];
  let store: Store;

  before(async function () {
    const started = await startSharedInstances('shared', sharedYaml);
    if ('problem' in started) {
      console.log(`      ${started.problem}: shared-state suite skipped`);
      this.skip();
    }
    shared = started;
    ({ fake, store, gateways } = shared);
  });

  after(async () => shared?.close());

  it('admits exactly the three requests the balance can hold, across both instances', async () => {
    const body = JSON.stringify({ model: 'gpt-priced', max_tokens: 1000, messages: [{ role: 'user', content: 'Count to three.' }] });
    const hold = BigInt(Buffer.byteLength(body)) * 1000n + 1000n * 5000n;
    const account = await store.createAccount({ name: 'shared', role: 'user' });
    const { key } = await issueApiKey(store, { accountId: account.id, name: null });
    await store.credit({ accountId: account.id, amount: hold * 3n + hold / 2n, kind: 'admin', actor: 'test', note: 'three holds' });
    // The admitted replies are held until the 47 others are back, as in billing.test.ts: were one to
    // settle first, the money it gives back could admit a request still on its way.
    let answered = 0;
    let allRefused!: () => void;
    const refusalsBack = new Promise<void>((resolve) => (allRefused = resolve));
    for (let i = 0; i < 3; i++) fake.enqueue({ until: refusalsBack, then: chatCompletion({ text: 'one two three', inputTokens: 20, outputTokens: 10 }) });

    const statuses = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        fetch(`${gateways[i % 2].url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body,
        }).then(async (res) => {
          await res.arrayBuffer();
          if (++answered === 47) allRefused();
          return res.status;
        }),
      ),
    );
    expect(statuses.filter((status) => status === 200), 'admitted').to.have.length(3);
    expect(statuses.filter((status) => status === 402), 'refused').to.have.length(47);
    expect(fake.requests).to.have.length(3);

    const expected = hold * 3n + hold / 2n - 3n * 70_000n;
    const deadline = Date.now() + 5000;
    let charges = await store.listCharges({ accountId: account.id });
    while (charges.length < 3 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      charges = await store.listCharges({ accountId: account.id });
    }
    expect(charges).to.have.length(3);
    expect(await store.balance(account.id)).to.deep.equal({ balance: expected, held: 0n });
    const totals = (await store.ledgerTotals()).find((row) => row.accountId === account.id)!;
    expect(totals.credits - totals.charges).to.equal(totals.balance);
  });
});
