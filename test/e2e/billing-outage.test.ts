/**
 * Billing fails closed: with the balance book's Redis unreachable, a priced request is refused with a
 * 503 in bounded time and never reaches the upstream; nothing is served unbilled.
 */
import { expect } from 'chai';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { chatCompletion } from '../helpers/upstream-replies';

describe('e2e: billing with its Redis unreachable', () => {
  let fake: FakeUpstream;
  let tg: TestGateway;

  before(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({
      yaml: `
version: 1
server: { host: 127.0.0.1 }
store: { url: "sqlite::memory:" }
redis: { url: "redis://127.0.0.1:1", command_timeout_ms: 200 }
providers:
  openai: { protocol: openai, base_url: ${fake.url}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  gpt-priced: { family: openai, routes: [{ provider: openai }], price: { input: 1, output: 5 }, max_output_tokens: 4096, context_window: 200000 }
  gpt-free: { family: openai, routes: [{ provider: openai }], free: true }
`,
    });
    await tg.store.credit({ accountId: tg.accountId, amount: 10n ** 12n, kind: 'admin', actor: 'test', note: 'funds' });
  });

  after(async () => {
    await fake?.close();
    await tg?.stop();
  });

  function ask(model: string): Promise<Response> {
    return fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tg.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: 'x' }] }),
    });
  }

  it('refuses a priced request with 503 billing_unavailable, quickly, without calling the upstream', async () => {
    const started = Date.now();
    const res = await ask('gpt-priced');
    expect(Date.now() - started).to.be.below(2000);
    expect(res.status).to.equal(503);
    expect(res.headers.get('retry-after')).to.equal('1');
    const body = (await res.json()) as { error: { code: string; message: string } };
    expect(body.error.code).to.equal('billing_unavailable');
    expect(fake.requests).to.have.length(0);
  });

  it('still serves a free model, which holds nothing', async () => {
    fake.enqueue(chatCompletion({ text: 'free' }));
    const res = await ask('gpt-free');
    expect(res.status).to.equal(200);
  });
});
