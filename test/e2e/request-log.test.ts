/**
 * The request log: one JSON line per request, with its ids, counts and timings, written once the
 * answer is over; and nothing secret or private in any line the gateway writes (keys, authorization
 * values, cookies, provider keys, prompt and completion text), at the most verbose level.
 */
import { expect } from 'chai';
import { unitsToNano } from '../../src/billing/money';
import { captureLogger } from '../helpers/capture-logger';
import { startFakeUpstream, waitUntil, type FakeUpstream } from '../helpers/fake-upstream';
import { defaultTestYaml, PROVIDER_SENTINEL, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { anthropicError, anthropicMessage, anthropicStream } from '../helpers/upstream-replies';

const PROMPT = 'PROMPT-SENTINEL-the-secret-plan';
const COMPLETION = 'COMPLETION-SENTINEL-the-private-answer';
const COOKIE = 'COOKIE-SENTINEL-session';
const BOGUS_KEY = 'sk-BOGUSSENTINELKEY0123456789abcdefghijklmnop';

interface LogLine {
  level: string;
  msg: string;
  requestId?: string;
  [field: string]: unknown;
}

/** The claude-sonnet-5 model of the default test YAML, priced so charges are not 0. */
function pricedYaml(url: string): string {
  return defaultTestYaml(url).replace('    free: true\n', '    price: { input: 1, output: 5 }\n    max_output_tokens: 4096\n    context_window: 200000\n');
}

function ask(tg: TestGateway, headers: Record<string, string>, options: { stream?: boolean; model?: string } = {}): Promise<Response> {
  return fetch(`${tg.url}/v1/messages`, {
    method: 'POST',
    headers: { 'anthropic-version': '2023-06-01', 'content-type': 'application/json', cookie: `session=${COOKIE}`, ...headers },
    body: JSON.stringify({
      model: options.model ?? 'claude-sonnet-5',
      max_tokens: 50,
      stream: options.stream === true,
      messages: [{ role: 'user', content: PROMPT }],
    }),
  });
}

describe('e2e: the request log', () => {
  let fake: FakeUpstream;
  let tg: TestGateway;
  const lines: string[] = [];

  const parsed = () => lines.map((line) => JSON.parse(line) as LogLine);
  const requestLine = (requestId: string) =>
    waitUntil(() => parsed().find((line) => line.msg === 'request' && line.requestId === requestId), 5000, `the log line of ${requestId}`);

  before(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: pricedYaml(fake.url), logger: captureLogger('debug', lines) });
    await tg.store.credit({ accountId: tg.accountId, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: 'funds' });
  });

  after(async () => {
    await tg?.stop();
    await fake?.close();
  });

  it('writes one line per request with ids, counts, cost and timings, once the answer is over', async () => {
    fake.enqueue(anthropicMessage({ text: COMPLETION, inputTokens: 100, outputTokens: 20, headers: { 'request-id': 'upstream-req-42' } }));
    const res = await ask(tg, { 'x-api-key': tg.key, 'x-request-id': 'client-req-7' });
    expect(res.status).to.equal(200);
    // The billing id is the gateway's own; the client's is kept for correlation, here and upstream.
    const requestId = res.headers.get('x-request-id')!;
    expect(requestId).to.match(/^req_[0-9a-f]{32}$/);
    expect(await res.text()).to.include(COMPLETION);
    expect(fake.requests[0].headers['x-request-id']).to.equal('client-req-7');

    const line = await requestLine(requestId);
    const [key] = await tg.store.listKeys({ accountId: tg.accountId });
    expect(line).to.deep.include({
      level: 'info',
      requestId,
      clientRequestId: 'client-req-7',
      accountId: tg.accountId,
      keyPrefix: key.prefix,
      endpoint: 'messages',
      model: 'claude-sonnet-5',
      stream: false,
      provider: 'anthropic',
      attempts: 1,
      status: 200,
      errorCode: null,
      outcome: 'delivered',
      // 100 input at 1 and 20 output at 5 per million tokens.
      cost: '0.0002',
      usageSource: 'upstream',
      upstreamRequestId: 'upstream-req-42',
    });
    expect(line.tokens).to.deep.equal({ input: 100, cacheWrite: 0, cacheWrite1h: 0, cacheRead: 0, output: 20, imageInput: 0, imageOutput: 0 });
    expect(line.durationMs).to.be.a('number').and.at.least(0);
    expect(line.ttfbMs).to.be.a('number').and.at.least(0).and.at.most(line.durationMs as number);
    expect(parsed().filter((entry) => entry.requestId === requestId && entry.msg === 'request')).to.have.length(1);
  });

  it('logs a stream after its last byte, with the generated request id the client got', async () => {
    fake.enqueue(anthropicStream({ text: COMPLETION, inputTokens: 50, outputTokens: 10, headers: { 'request-id': 'upstream-req-43' } }));
    const res = await ask(tg, { authorization: `Bearer ${tg.key}` }, { stream: true });
    const requestId = res.headers.get('x-request-id')!;
    expect(requestId).to.match(/^req_[0-9a-f]{32}$/);
    expect(await res.text()).to.include('message_stop');
    const line = await requestLine(requestId);
    expect(line).to.deep.include({ stream: true, status: 200, outcome: 'delivered', cost: '0.0001', upstreamRequestId: 'upstream-req-43' });
    expect(line.tokens).to.deep.equal({ input: 50, cacheWrite: 0, cacheWrite1h: 0, cacheRead: 0, output: 10, imageInput: 0, imageOutput: 0 });
    expect(line.ttfbMs).to.be.a('number');
  });

  it('logs a refused request with its status and error code, and no account', async () => {
    const res = await ask(tg, { authorization: `Bearer ${BOGUS_KEY}` });
    expect(res.status).to.equal(401);
    const line = await requestLine(res.headers.get('x-request-id')!);
    expect(line).to.deep.include({
      status: 401,
      errorCode: 'TOLLGATE_ERR_AUTH_INVALID_KEY',
      accountId: null,
      keyPrefix: null,
      model: '',
      provider: null,
      attempts: 0,
      tokens: null,
      cost: null,
      ttfbMs: null,
    });
  });

  it('logs the operator routes at debug only, with their request id', async () => {
    const res = await fetch(`${tg.url}/healthz`, { headers: { 'x-request-id': 'probe-1' } });
    const requestId = res.headers.get('x-request-id')!;
    expect(requestId).to.match(/^req_/);
    const line = await requestLine(requestId);
    expect(line.clientRequestId).to.equal('probe-1');
    expect(line.level).to.equal('debug');
    expect(line.status).to.equal(200);
  });

  it('never writes a key, an authorization value, a cookie, a provider key or prompt and completion text', async () => {
    // An upstream that refuses the gateway's key, naming it: a 502 the gateway logs at error level.
    fake.enqueue(anthropicError(401, 'authentication_error', `invalid x-api-key ${PROVIDER_SENTINEL}-anthropic`));
    const refused = await ask(tg, { 'x-api-key': tg.key });
    expect(refused.status).to.equal(502);
    // An upstream 500 that echoes the prompt and the provider key back.
    fake.enqueue(anthropicError(500, 'api_error', `failed on ${PROMPT} with ${PROVIDER_SENTINEL}`));
    const failed = await ask(tg, { 'x-api-key': tg.key });
    expect(failed.status).to.equal(500);
    await requestLine(refused.headers.get('x-request-id')!);
    await requestLine(failed.headers.get('x-request-id')!);
    expect(parsed().some((line) => line.level === 'error' && line.requestId === refused.headers.get('x-request-id'))).to.equal(true);

    const everything = lines.join('\n');
    expect(lines.length).to.be.above(5);
    const secret = tg.key.slice('sk-'.length + 8);
    for (const forbidden of [tg.key, secret, `Bearer ${tg.key}`, BOGUS_KEY, COOKIE, PROVIDER_SENTINEL, PROMPT, COMPLETION]) {
      expect(everything, forbidden).to.not.include(forbidden);
    }
  });
});

describe('createLogger', () => {
  it('writes no request line at LOG_LEVEL=warn', async () => {
    const lines: string[] = [];
    const fake = await startFakeUpstream();
    const tg = await startTestGateway({ upstreamUrl: fake.url, logger: captureLogger('warn', lines) });
    try {
      const res = await fetch(`${tg.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': tg.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-sonnet-5', max_tokens: 5, messages: [{ role: 'user', content: 'Hi' }] }),
      });
      expect(res.status).to.equal(200);
      await res.text();
      // A failing request still logs at error level, which warn lets through: proof the sink is live.
      // (A provider refusing the gateway's key is a fault; a provider with no key is not, and says so
      // at start instead.)
      fake.enqueue(anthropicError(401, 'authentication_error', 'invalid x-api-key'));
      const bad = await fetch(`${tg.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': tg.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'claude-sonnet-5', max_tokens: 5, messages: [{ role: 'user', content: 'Hi' }] }),
      });
      expect(bad.status).to.equal(502);
      await waitUntil(() => (lines.some((line) => line.includes('"level":"error"')) ? true : undefined), 5000, 'the error line');
      expect(lines.map((line) => (JSON.parse(line) as LogLine).msg)).to.not.include('request');
    } finally {
      await tg.stop();
      await fake.close();
    }
  });
});
