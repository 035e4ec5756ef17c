/**
 * The smaller items of the "no request can stall or bloat the gateway" issue: what reaches a client
 * when a provider redirects, streams unasked or is overloaded; key names with control characters;
 * shutdown at its deadline; 405 with Allow on /api; gzip request bodies; client addresses behind
 * proxies; and the wrong-key limiter with a shared address.
 */
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import { isValidKeyName, printableKeyName } from '../../src/auth/key-name';
import { createKeyCommand } from '../../src/cli/keys';
import { ApiClient } from '../admin/api-client';
import { addAccount, consoleYaml, PASSWORD, passwordHash } from '../admin/fixtures';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { defaultTestYaml, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { anthropicError, anthropicStream, chatCompletion, chatStream, openaiError } from '../helpers/upstream-replies';

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

async function post(url: string, key: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'x-api-key': key, ...headers },
    body: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

const CHAT = { model: 'gpt-test', messages: [{ role: 'user', content: 'Hi' }] };
const MESSAGES = { model: 'claude-sonnet-5', max_tokens: 16, messages: [{ role: 'user', content: 'Hi' }] };

describe('e2e: hardening', function () {
  this.timeout(20_000);
  let fake: FakeUpstream;
  let tg: TestGateway;

  before(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ upstreamUrl: fake.url });
  });
  after(async () => {
    await tg.stop();
    await fake.close();
  });
  beforeEach(() => fake.reset());

  describe('what a provider sends that a client cannot use', () => {
    it('an upstream 3xx is a 502, native and translated, never relayed without its Location', async () => {
      fake.enqueue({ status: 302, headers: { location: 'http://elsewhere.example/' }, body: '' });
      const native = await post(`${tg.url}/v1/chat/completions`, tg.key, CHAT);
      expect(native.status, native.text).to.equal(502);
      expect(JSON.parse(native.text).error.code).to.equal('upstream_invalid_response');
      fake.enqueue({ status: 301, body: 'moved' });
      const translated = await post(`${tg.url}/v1/chat/completions`, tg.key, { ...CHAT, model: 'claude-sonnet-5' });
      expect(translated.status, translated.text).to.equal(502);
    });

    it('an event stream answering stream:false is a 502, not relayed as SSE', async () => {
      fake.enqueue(chatStream());
      const answer = await post(`${tg.url}/v1/chat/completions`, tg.key, CHAT);
      expect(answer.status, answer.text).to.equal(502);
      expect(answer.headers.get('content-type')).to.include('application/json');
      fake.enqueue(anthropicStream());
      const messages = await post(`${tg.url}/v1/messages`, tg.key, MESSAGES);
      expect(messages.status, messages.text).to.equal(502);
    });

    it("the provider's 429 is a 503 upstream_overloaded with the provider's retry-after, in each shape", async () => {
      fake.enqueue({ ...openaiError(429, 'Rate limit reached for requests', { type: 'requests', code: 'rate_limit_exceeded' }), headers: { 'retry-after': '7' } });
      const chat = await post(`${tg.url}/v1/chat/completions`, tg.key, CHAT);
      expect(chat.status, chat.text).to.equal(503);
      expect(chat.headers.get('retry-after')).to.equal('7');
      expect(JSON.parse(chat.text).error).to.deep.include({ type: 'service_unavailable_error', code: 'upstream_overloaded' });
      fake.enqueue(anthropicError(429, 'rate_limit_error', 'Number of requests has exceeded your rate limit'));
      const messages = await post(`${tg.url}/v1/messages`, tg.key, MESSAGES);
      expect(messages.status, messages.text).to.equal(503);
      expect(JSON.parse(messages.text).error.type).to.equal('overloaded_error');
      expect(Number(messages.headers.get('retry-after'))).to.be.at.least(1);
    });
  });

  describe('gzip request bodies', () => {
    it('decompresses a gzip body and forwards the JSON', async () => {
      fake.enqueue(chatCompletion({ text: 'ok' }));
      const answer = await post(`${tg.url}/v1/chat/completions`, tg.key, gzipSync(JSON.stringify(CHAT)), { 'content-encoding': 'gzip' });
      expect(answer.status, answer.text).to.equal(200);
      expect(fake.requests[0].json()).to.deep.equal(CHAT);
      expect(fake.requests[0].headers['content-encoding']).to.equal(undefined);
    });

    it('answers 413 when the body decompresses past max_body_bytes (a small gzip bomb)', async () => {
      const bomb = gzipSync(Buffer.alloc(50 * 1024 * 1024, 0x20));
      expect(bomb.length).to.be.below(100 * 1024);
      const answer = await post(`${tg.url}/v1/chat/completions`, tg.key, bomb, { 'content-encoding': 'gzip' });
      expect(answer.status, answer.text).to.equal(413);
      expect(fake.requests).to.have.length(0);
    });

    it('answers 415 for an encoding it does not support, and 400 for a body that is not gzip', async () => {
      const br = await post(`${tg.url}/v1/chat/completions`, tg.key, Buffer.from([0x1f, 0x8b, 0, 1, 2]), { 'content-encoding': 'br' });
      expect(br.status, br.text).to.equal(415);
      expect(JSON.parse(br.text).error.code).to.equal('unsupported_content_encoding');
      const garbled = await post(`${tg.url}/v1/chat/completions`, tg.key, Buffer.from('not gzip at all'), { 'content-encoding': 'gzip' });
      expect(garbled.status, garbled.text).to.equal(400);
      expect(JSON.parse(garbled.text).error.code).to.equal('invalid_content_encoding');
    });

    it('never echoes binary bytes in the invalid-JSON message', async () => {
      const answer = await post(`${tg.url}/v1/chat/completions`, tg.key, gzipSync('{"model":"gpt-test"}'));
      expect(answer.status).to.equal(400);
      expect(JSON.parse(answer.text).error.message).to.not.match(/[\u0000-\u0008\u000e-\u001f\u0080-\u009f\ufffd]/);
    });
  });

  describe('shutdown', () => {
    it('ends a stream still running at the deadline with an error event, and says 503 on /readyz before it stops listening', async () => {
      const local = await startTestGateway({ upstreamUrl: fake.url });
      const events = anthropicStream({ text: 'a stream that outlives the grace period' }).events;
      fake.enqueue({ status: 200, events: [...events.slice(0, 3), { pauseMs: 5000 }, ...events.slice(3)] });
      const response = await fetch(`${local.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': local.key, 'content-type': 'application/json' },
        body: JSON.stringify({ ...MESSAGES, stream: true }),
      });
      expect(response.status).to.equal(200);
      const body = response.text();
      const stopped = local.gateway.stop({ graceMs: 300, unreadyMs: 300 });
      // A new connection during the unready window: the listener is still open and readiness says 503.
      const ready = await fetch(`${local.url}/readyz`, { headers: { connection: 'close' } });
      expect(ready.status).to.equal(503);
      const text = await body;
      expect(text).to.include('event: error');
      expect(text).to.include('shutting down');
      expect(text).to.not.include('message_stop');
      await stopped;
      await local.store.close();
    });
  });

  describe('key names', () => {
    it('refuses C0, C1 and bidi control characters, and prints names stored before safely', async () => {
      for (const name of ['ok\u001b[2J', 'csi\u009b31m', 'rtl\u202eevil', 'two\nlines', '']) expect(isValidKeyName(name), JSON.stringify(name)).to.equal(false);
      expect(isValidKeyName('laptop — café ✓')).to.equal(true);
      expect(printableKeyName('a\u001b[31mb\u009bc')).to.equal('a?[31mb?c');
      let refused: unknown = null;
      await createKeyCommand(tg.store, { account: (await tg.store.listAccounts())[0].name, name: 'x\u009b2J' }, () => undefined).catch((error: unknown) => (refused = error));
      expect(String(refused)).to.include('invalid key name');
    });

    it('the management API refuses them with a 400 naming the field', async () => {
      await passwordHash();
      const local = await startTestGateway({ yaml: consoleYaml(fake.url) });
      try {
        await addAccount(local.store, 'kit');
        const kit = await ApiClient.login(local.url, 'kit', PASSWORD);
        const refused = await kit.post('/api/keys', { name: 'evil\u001b]0;pwned\u0007' });
        expect(refused.status, refused.text).to.equal(400);
        expect(refused.text).to.include('name');
        const allow = await kit.request('PUT', '/api/keys');
        expect(allow.status).to.equal(405);
        expect(allow.headers.get('allow')).to.include('POST');
      } finally {
        await local.stop();
      }
    });
  });

  describe('behind a proxy (trust_proxy, one trusted hop) with the wrong-key limit at 2 a minute', () => {
    let proxied: TestGateway;
    before(async () => {
      const yaml = defaultTestYaml(fake.url)
        .replace('  host: 127.0.0.1\n', '  host: 127.0.0.1\n  trust_proxy: true\n  trusted_proxy_hops: 1\n')
        .replace('auth: { failures_per_minute: 0 }', 'auth: { failures_per_minute: 2 }');
      proxied = await startTestGateway({ yaml });
    });
    after(() => proxied.stop());

    it('takes the address the proxy appended, so forged entries to its left escape nothing', async () => {
      const statuses = [];
      for (let i = 0; i < 4; i++) {
        // The client wrote a new address each time; the proxy appended the one it saw.
        const answer = await post(`${proxied.url}/v1/chat/completions`, 'sk-wrong', CHAT, { 'x-forwarded-for': `10.0.0.${i}, 198.51.100.7` });
        statuses.push(answer.status);
      }
      expect(statuses).to.deep.equal([401, 401, 429, 429]);
      // Another client behind the same proxy is not affected.
      const other = await post(`${proxied.url}/v1/chat/completions`, 'sk-wrong', CHAT, { 'x-forwarded-for': '198.51.100.8' });
      expect(other.status).to.equal(401);
    });

    it('lets a valid key from an address over the limit in (a shared NAT), without opening it to guesses', async () => {
      fake.enqueue(chatCompletion({ text: 'first' }), chatCompletion({ text: 'second' }));
      const nat = { 'x-forwarded-for': '203.0.113.9' };
      expect((await post(`${proxied.url}/v1/chat/completions`, proxied.key, CHAT, nat)).status).to.equal(200);
      for (let i = 0; i < 2; i++) await post(`${proxied.url}/v1/chat/completions`, 'sk-wrong', CHAT, nat);
      expect((await post(`${proxied.url}/v1/chat/completions`, 'sk-wrong', CHAT, nat)).status).to.equal(429);
      const valid = await post(`${proxied.url}/v1/chat/completions`, proxied.key, CHAT, nat);
      expect(valid.status, valid.text).to.equal(200);
    });
  });
});
