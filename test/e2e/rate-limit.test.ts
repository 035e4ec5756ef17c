/**
 * Rate limits end to end on one instance (docs/faults.md#rate-limiting): requests per minute with both
 * protocols' headers and error shapes, concurrent streams released when they end or are aborted,
 * tokens per minute corrected from the real usage, no hold and no upstream call for a 429, and a
 * Redis that cannot be reached (local limits, bounded latency, one warning).
 */
import { Writable } from 'node:stream';
import { expect } from 'chai';
import pino from 'pino';
import { issueApiKey } from '../../src/auth/issue-key';
import { parseConfig } from '../../src/config/load';
import { startGateway, type Gateway } from '../../src/gateway';
import { openStore } from '../../src/store/open';
import type { Store } from '../../src/store/store';
import { startFakeUpstream, waitUntil, type FakeUpstream } from '../helpers/fake-upstream';
import { defaultTestYaml, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { chatCompletion, chatStream } from '../helpers/upstream-replies';

/** The suite's gateway.yaml: the default one plus a rate-limit section (and billing for priced models). */
function limitedYaml(upstreamUrl: string, rateLimit: string): string {
  return `${defaultTestYaml(upstreamUrl).replace(
    'models:\n',
    `models:\n  gpt-priced: { family: openai, routes: [{ provider: openai }], price: { input: 1, output: 5 }, max_output_tokens: 1000, context_window: 200000 }\n`,
  )}  rate-limit: ${rateLimit}\n  billing: { flush_interval_ms: 10 }\n`;
}

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly json: any;
}

async function chat(url: string, key: string, body: Record<string, unknown> = {}): Promise<Answer> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], ...body }),
  });
  return { status: res.status, headers: res.headers, json: await res.json() };
}

async function messages(url: string, key: string): Promise<Answer> {
  const res = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'claude-sonnet-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.status, headers: res.headers, json: await res.json() };
}

/** A streamed chat request left open: the response has started, its body is not read. */
async function openStream(url: string, key: string): Promise<{ status: number; abort(): void; finish(): Promise<string> }> {
  const controller = new AbortController();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    signal: controller.signal,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.status, abort: () => controller.abort(), finish: () => res.text() };
}

/** A stream whose first chunk goes out at once and which then stays open until the client leaves. */
function hangingStream() {
  const stream = chatStream();
  return { ...stream, events: stream.events.slice(0, 2), thenHang: true };
}

/** Sends requests until one is admitted (the release it waits for happens just after the previous response ends). */
async function admittedSoon(send: () => Promise<number>): Promise<void> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const status = await send();
    if (status === 200) return;
    expect(status).to.equal(429);
    if (Date.now() > deadline) throw new Error('no request was admitted within 3 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('e2e: rate limits', () => {
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

  it('refuses the request past rpm with 429 in the OpenAI shape, headers on every response, no upstream call', async () => {
    tg = await startTestGateway({ yaml: limitedYaml(fake.url, '{ per_key: { rpm: 2 } }') });
    const first = await chat(tg.url, tg.key);
    const second = await chat(tg.url, tg.key);
    const third = await chat(tg.url, tg.key);
    expect([first.status, second.status, third.status]).to.deep.equal([200, 200, 429]);
    expect(fake.requests).to.have.length(2);
    expect([first, second, third].map((a) => a.headers.get('x-ratelimit-remaining-requests'))).to.deep.equal(['1', '0', '0']);
    for (const answer of [first, second, third]) {
      expect(answer.headers.get('x-ratelimit-limit-requests')).to.equal('2');
      expect(answer.headers.get('x-ratelimit-reset-requests')).to.match(/^(\d+(\.\d+)?s|\d+ms|1m0s)$/);
      expect(answer.headers.get('anthropic-ratelimit-requests-limit')).to.equal(null);
    }
    expect(third.json.error).to.deep.include({ type: 'requests', code: 'rate_limit_exceeded', param: null });
    expect(third.json.error.message).to.contain('2 requests per minute');
    const retryAfter = third.headers.get('retry-after')!;
    expect(retryAfter).to.match(/^\d+$/);
    expect(Number(retryAfter)).to.be.within(1, 60);
  });

  it('answers /v1/messages in the Anthropic shape with anthropic-ratelimit-* headers', async () => {
    tg = await startTestGateway({ yaml: limitedYaml(fake.url, '{ per_key: { rpm: 1, tpm: 100000 } }') });
    const ok = await messages(tg.url, tg.key);
    const refused = await messages(tg.url, tg.key);
    expect([ok.status, refused.status]).to.deep.equal([200, 429]);
    expect(fake.requests).to.have.length(1);
    expect(refused.json).to.deep.include({ type: 'error' });
    expect(refused.json.error.type).to.equal('rate_limit_error');
    for (const answer of [ok, refused]) {
      expect(answer.headers.get('anthropic-ratelimit-requests-limit')).to.equal('1');
      expect(answer.headers.get('anthropic-ratelimit-requests-remaining')).to.equal('0');
      expect(answer.headers.get('anthropic-ratelimit-tokens-limit')).to.equal('100000');
      const reset = Date.parse(answer.headers.get('anthropic-ratelimit-requests-reset')!);
      expect(reset - Date.now()).to.be.within(0, 61_000);
      expect(answer.headers.get('anthropic-ratelimit-requests-reset')).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      expect(answer.headers.get('x-ratelimit-limit-requests')).to.equal(null);
    }
    expect(Number(refused.headers.get('retry-after'))).to.be.at.least(1);
  });

  it('limits an account across its keys, and a 429 holds and charges nothing', async () => {
    tg = await startTestGateway({ yaml: limitedYaml(fake.url, '{ per_account: { rpm: 2 } }') });
    await tg.store.credit({ accountId: tg.accountId, amount: 10n ** 12n, kind: 'admin', actor: 'test', note: 'funds' });
    const other = await tg.createKey();
    fake.enqueue(chatCompletion({ inputTokens: 20, outputTokens: 10 }), chatCompletion({ inputTokens: 20, outputTokens: 10 }));
    const answers = [await chat(tg.url, tg.key, { model: 'gpt-priced' }), await chat(tg.url, other.key, { model: 'gpt-priced' })];
    const refused = await chat(tg.url, other.key, { model: 'gpt-priced' });
    expect([...answers.map((a) => a.status), refused.status]).to.deep.equal([200, 200, 429]);
    expect(fake.requests).to.have.length(2);
    const charges = await waitUntilAsync(() => tg!.store.listCharges({ accountId: tg!.accountId }), (list) => list.length >= 2);
    expect(charges.map((charge) => charge.requestId)).to.not.include(refused.headers.get('x-request-id'));
    expect(charges).to.have.length(2);
    expect((await tg.store.balance(tg.accountId)).held).to.equal(0n);
  });

  it('refuses a stream past the concurrency limit and frees slots when streams end or are aborted', async () => {
    tg = await startTestGateway({ yaml: limitedYaml(fake.url, '{ per_key: { concurrency: 2 } }') });
    const ending = chatStream();
    // Stream A stays open until the third request has been refused: a fixed pause let a loaded machine
    // end A first, and the third request then took its slot.
    let refusedBack!: () => void;
    const thirdRefused = new Promise<void>((resolve) => (refusedBack = resolve));
    fake.enqueue({ ...ending, events: [...ending.events.slice(0, 2), { until: thirdRefused }, ...ending.events.slice(2)] }, hangingStream());
    const a = await openStream(tg.url, tg.key);
    const b = await openStream(tg.url, tg.key);
    expect([a.status, b.status]).to.deep.equal([200, 200]);

    const refused = await chat(tg.url, tg.key);
    expect(refused.status).to.equal(429);
    expect(refused.json.error).to.deep.include({ code: 'concurrency_limit_exceeded' });
    expect(refused.headers.get('retry-after')).to.equal('1');
    expect(fake.requests).to.have.length(2);
    refusedBack();

    // Stream A ends on its own: its slot comes back, and a third stream takes it.
    expect(await a.finish()).to.contain('[DONE]');
    fake.enqueue(hangingStream());
    let c: Awaited<ReturnType<typeof openStream>> | undefined;
    await admittedSoon(async () => {
      const attempt = await openStream(tg!.url, tg!.key);
      if (attempt.status === 200) c = attempt;
      else await attempt.finish();
      return attempt.status;
    });
    expect((await chat(tg.url, tg.key)).status, 'B and C fill the slots').to.equal(429);

    // The client walks away from B and C: both slots come back.
    b.abort();
    c!.abort();
    await fake.waitForClose(1);
    await admittedSoon(async () => (await chat(tg!.url, tg!.key)).status);
    await admittedSoon(async () => {
      const [x, y] = await Promise.all([openStream(tg!.url, tg!.key), openStream(tg!.url, tg!.key)]);
      await Promise.all([x.finish(), y.finish()]);
      return x.status === 200 && y.status === 200 ? 200 : 429;
    });
  });

  it('reserves tokens per request and replaces the reservation by the real usage', async () => {
    tg = await startTestGateway({ yaml: limitedYaml(fake.url, '{ per_key: { tpm: 1300 } }') });
    const body = { max_tokens: 1000 };
    const bytes = Buffer.byteLength(JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }], ...body }));
    const reserved = Math.ceil(bytes / 3) + 1000;
    fake.enqueue(chatCompletion({ inputTokens: 20, outputTokens: 10 }), chatCompletion({ inputTokens: 20, outputTokens: 10 }));

    const first = await chat(tg.url, tg.key, body);
    expect(first.status).to.equal(200);
    expect(first.headers.get('x-ratelimit-remaining-tokens')).to.equal(String(1300 - reserved));
    // Without the correction (30 tokens used, not `reserved`) this one would not fit.
    const second = await chat(tg.url, tg.key, body);
    expect(second.status).to.equal(200);
    expect(second.headers.get('x-ratelimit-remaining-tokens')).to.equal(String(1300 - 30 - reserved));

    const tooBig = await chat(tg.url, tg.key, { max_tokens: 5000 });
    expect(tooBig.status).to.equal(429);
    expect(tooBig.json.error).to.deep.include({ type: 'tokens', code: 'rate_limit_exceeded' });
    expect(tooBig.json.error.message).to.contain('lower max_tokens');
    expect(fake.requests).to.have.length(2);
  });

  it('never admits concurrent requests past the tokens limit (E5)', async function () {
    // Its waits have wide bounds (a loaded machine); the suite's 10 s would cut them short.
    this.timeout(30_000);
    tg = await startTestGateway({ yaml: limitedYaml(fake.url, '{ per_key: { tpm: 10000 } }') });
    // Admitted requests are held upstream until every one of the ten is decided: answered (refused)
    // or arrived upstream (admitted). No admission is released (its reservation corrected to the
    // 30 tokens used) before the last decision, however slowly a loaded machine sends the ten; a
    // fixed upstream delay would let a late request in after the first two were corrected.
    let answered = 0;
    let openGate = () => {};
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    for (let i = 0; i < 10; i++) fake.enqueue({ until: gate, then: chatCompletion({ inputTokens: 20, outputTokens: 10 }) });
    const sent = Array.from({ length: 10 }, () => chat(tg!.url, tg!.key, { max_tokens: 4000 }).finally(() => (answered += 1)));
    await waitUntil(() => (answered + fake.requests.length >= 10 ? true : undefined), 15_000, 'every request answered or upstream');
    expect(fake.requests).to.have.length(2);
    openGate();
    const answers = await Promise.all(sent);
    expect(answers.filter((a) => a.status === 200)).to.have.length(2);
    expect(answers.filter((a) => a.status === 429)).to.have.length(8);
    for (const answer of answers) expect(Number(answer.headers.get('x-ratelimit-remaining-tokens'))).to.be.at.least(0);
    expect(fake.requests).to.have.length(2);
  });

  it('adds nothing when no limit is configured (the default)', async () => {
    tg = await startTestGateway({ upstreamUrl: fake.url });
    const answer = await chat(tg.url, tg.key);
    expect(answer.status).to.equal(200);
    expect([...answer.headers.keys()].filter((name) => name.includes('ratelimit'))).to.deep.equal([]);
  });
});

async function waitUntilAsync<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 3000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('e2e: rate limits with Redis unreachable', () => {
  let fake: FakeUpstream;
  let store: Store;
  let gateway: Gateway;
  let key: string;
  const lines: string[] = [];

  before(async () => {
    fake = await startFakeUpstream();
    const yaml = `${defaultTestYaml(fake.url)}  rate-limit: { per_key: { rpm: 3 } }\n  billing: { enabled: false }\n`.replace(
      'store:',
      'redis: { url: "redis://127.0.0.1:1", command_timeout_ms: 200 }\nstore:',
    );
    const config = parseConfig(yaml, 'redis-down.yaml', {});
    store = openStore({ url: 'sqlite::memory:' });
    await store.migrate();
    const account = await store.createAccount({ name: 'redis-down', role: 'user' });
    ({ key } = await issueApiKey(store, { accountId: account.id, name: null }));
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString('utf8').split('\n').filter((line) => line !== ''));
        done();
      },
    });
    gateway = await startGateway({ config, port: 0, store, logger: pino({ level: 'info' }, sink) });
  });

  after(async () => {
    await gateway?.stop(200);
    await store?.close();
    await fake?.close();
  });

  it('serves under local limits within bounded latency and warns once', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const started = Date.now();
      const answer = await chat(gateway.url, key);
      expect(Date.now() - started, `request ${i} latency`).to.be.below(2000);
      statuses.push(answer.status);
      if (answer.status === 429) expect(answer.json.error.type).to.equal('requests');
    }
    expect(statuses).to.deep.equal([200, 200, 200, 429, 429]);
    expect(fake.requests).to.have.length(3);
    const warnings = lines.map((line) => JSON.parse(line) as { level: number; msg: string }).filter((entry) => entry.msg.startsWith('rate-limit: Redis unavailable'));
    expect(warnings).to.have.length(1);
    expect(warnings[0].level).to.equal(40);
  });
});
