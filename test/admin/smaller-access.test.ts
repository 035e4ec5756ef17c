/**
 * The smaller holes: `count_tokens` (not billed, but served with the operator's upstream key) answers
 * 402 to an account that cannot pay for any request of a priced model, as every other endpoint does;
 * and redeeming codes has a failure limiter.
 */
import { expect } from 'chai';
import { issueApiKey } from '../../src/auth/issue-key';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { ApiClient, expectError } from './api-client';
import { addAccount, consoleYaml, PASSWORD, passwordHash } from './fixtures';

describe('count_tokens and an account that cannot pay', function () {
  this.timeout(30_000);
  let upstream: FakeUpstream;
  let tg: TestGateway;

  before(async () => {
    upstream = await startFakeUpstream();
    tg = await startTestGateway({ yaml: consoleYaml(upstream.url) });
  });

  after(async () => {
    await tg?.stop();
    await upstream?.close();
  });

  const countTokens = (key: string) =>
    fetch(`${tg.url}/v1/messages/count_tokens`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-priced', messages: [{ role: 'user', content: 'hi' }] }),
    }).then(async (res) => ({ status: res.status, json: (await res.json()) as any }));

  it('answers 402 at zero balance without calling the upstream, and counts once the account is funded', async () => {
    const account = await tg.store.createAccount({ name: 'broke', role: 'user' });
    const { key } = await issueApiKey(tg.store, { accountId: account.id, name: null });
    const before = upstream.requests.length;
    const refused = await countTokens(key);
    expect(refused.status).to.equal(402);
    expect(refused.json.error.type).to.equal('billing_error');
    expect(upstream.requests.length).to.equal(before);

    await tg.store.credit({ accountId: account.id, amount: 1_000_000n, kind: 'admin', actor: 'test', note: 'count_tokens' });
    const counted = await countTokens(key);
    expect(counted.status, JSON.stringify(counted.json)).to.equal(200);
  });
});

describe('redeeming codes: a failure limiter per account and address', function () {
  this.timeout(30_000);
  let tg: TestGateway;

  before(async () => {
    await passwordHash();
    tg = await startTestGateway({ yaml: consoleYaml('http://127.0.0.1:9', { console: 'login_failures_per_window: 3' }) });
  });

  after(async () => tg?.stop());

  it('refuses with 429 after 3 codes that did not work, before looking the next one up', async () => {
    await addAccount(tg.store, 'guesser');
    const client = await ApiClient.login(tg.url, 'guesser', PASSWORD);
    for (let i = 0; i < 3; i += 1) {
      expectError(await client.post('/api/topup/redeem', { code: `tg-${'A'.repeat(23)}${'BCD'[i]}` }), 404, 'not_found', 'code');
    }
    const limited = await client.post('/api/topup/redeem', { code: `tg-${'A'.repeat(23)}E` });
    expectError(limited, 429, 'too_many_attempts');
    expect(Number(limited.headers.get('retry-after'))).to.be.within(1, 15 * 60);
  });
});
