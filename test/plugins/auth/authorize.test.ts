/**
 * The auth plugin's authorization step end to end: a key's model list holds on every endpoint
 * (`count_tokens` included) with billing on or off, and a refused request takes no rate-limit slot,
 * no hold and no charge, because it is refused before either plugin runs.
 */
import { expect } from 'chai';
import { issueApiKey } from '../../../src/auth/issue-key';
import { startFakeUpstream, type FakeUpstream } from '../../helpers/fake-upstream';
import { defaultTestYaml, startTestGateway, type TestGateway } from '../../helpers/test-gateway';
import { chatCompletion } from '../../helpers/upstream-replies';

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly json: any;
}

async function post(url: string, key: string, path: string, body: Record<string, unknown>): Promise<Answer> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, json: await res.json() };
}

const countTokens = (url: string, key: string, model: string) =>
  post(url, key, '/v1/messages/count_tokens', { model, messages: [{ role: 'user', content: 'hi' }] });

const chat = (url: string, key: string, model: string) =>
  post(url, key, '/v1/chat/completions', { model, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });

/** The default test gateway.yaml with a priced model and these plugin lines added. */
function yamlWith(upstreamUrl: string, plugins: string): string {
  return `${defaultTestYaml(upstreamUrl).replace(
    'models:\n',
    'models:\n  gpt-priced: { family: openai, routes: [{ provider: openai }], price: { input: 1, output: 5 }, max_output_tokens: 1000, context_window: 200000 }\n',
  )}${plugins}`;
}

async function keyFor(tg: TestGateway, models: readonly string[]): Promise<string> {
  return (await issueApiKey(tg.store, { accountId: tg.accountId, name: 'limited', models })).key;
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('auth: the key\'s model list', () => {
  let fake: FakeUpstream;
  let tg: TestGateway | undefined;

  before(async () => {
    fake = await startFakeUpstream();
  });
  beforeEach(() => fake.reset());
  afterEach(async () => {
    await tg?.stop();
    tg = undefined;
  });
  after(async () => fake.close());

  it('refuses another model on count_tokens with billing disabled, in the Anthropic shape', async () => {
    tg = await startTestGateway({ yaml: yamlWith(fake.url, '  billing: { enabled: false }\n') });
    const limited = await keyFor(tg, ['claude-sonnet-5']);
    // gpt-test's tokens are counted by the gateway itself: nothing but the model list stands in the way.
    const refused = await countTokens(tg.url, limited, 'gpt-test');
    expect(refused.status).to.equal(403);
    expect(refused.json).to.deep.include({
      type: 'error',
      error: { type: 'permission_error', message: "This API key may not use the model 'gpt-test'." },
    });
    expect(refused.headers.get('x-tollgate-token-count')).to.equal(null);

    const allowed = await countTokens(tg.url, await keyFor(tg, ['gpt-test']), 'gpt-test');
    expect(allowed.status).to.equal(200);
    expect(allowed.json.input_tokens).to.be.a('number');
    // And on a generating endpoint, billing off: the same refusal, no upstream call.
    const chatRefused = await chat(tg.url, limited, 'gpt-test');
    expect(chatRefused.status).to.equal(403);
    expect(chatRefused.json.error).to.deep.include({ code: 'model_not_allowed', param: 'model', type: 'permission_error' });
    expect(fake.requests).to.have.length(0);
  });

  it('refuses before rate limiting counts the request: the key keeps its one request a minute', async () => {
    tg = await startTestGateway({ yaml: yamlWith(fake.url, '  billing: { enabled: false }\n  rate-limit: { per_key: { rpm: 1 } }\n') });
    const limited = await keyFor(tg, ['gpt-test']);
    const refused = await chat(tg.url, limited, 'claude-sonnet-5');
    expect(refused.status).to.equal(403);
    // The limiter was not asked: it sets its headers on every answer it decides.
    expect(refused.headers.get('x-ratelimit-limit-requests')).to.equal(null);

    fake.enqueue(chatCompletion({ inputTokens: 5, outputTokens: 5 }));
    const admitted = await chat(tg.url, limited, 'gpt-test');
    expect(admitted.status, JSON.stringify(admitted.json)).to.equal(200);
    // The limiter's count for the minute: this request alone.
    expect(admitted.headers.get('x-ratelimit-remaining-requests')).to.equal('0');
    // Spent, the limit now refuses the allowed model, while the refused one is still refused for itself.
    expect((await chat(tg.url, limited, 'gpt-test')).status).to.equal(429);
    expect((await chat(tg.url, limited, 'claude-sonnet-5')).status).to.equal(403);
  });

  it('refuses before billing holds anything: no hold, no charge, even with no balance', async () => {
    tg = await startTestGateway({ yaml: yamlWith(fake.url, '  billing: { flush_interval_ms: 10 }\n') });
    const limited = await keyFor(tg, ['gpt-priced']);
    // No funds: billing would answer 402 had it been reached.
    const refused = await chat(tg.url, limited, 'claude-sonnet-5');
    expect(refused.status).to.equal(403);
    expect(refused.json.error.code).to.equal('model_not_allowed');

    await tg.store.credit({ accountId: tg.accountId, amount: 10n ** 12n, kind: 'admin', actor: 'test', note: 'funds' });
    const refusedWithFunds = await chat(tg.url, limited, 'gpt-test');
    expect(refusedWithFunds.status).to.equal(403);
    fake.enqueue(chatCompletion({ inputTokens: 20, outputTokens: 10 }));
    const admitted = await chat(tg.url, limited, 'gpt-priced');
    expect(admitted.status, JSON.stringify(admitted.json)).to.equal(200);

    // Billing writes a charge for every request it held for, refused further in or not, in order: only the admitted one is there.
    const charges = await until(() => tg!.store.listCharges({ accountId: tg!.accountId }), (list) => list.length >= 1);
    expect(charges.map((charge) => charge.requestId)).to.deep.equal([admitted.headers.get('x-request-id')]);
    expect((await tg.store.balance(tg.accountId)).held).to.equal(0n);
    expect(fake.requests).to.have.length(1);
  });
});
