/**
 * Native pass-through (docs/decisions.md#d2-native-requests-pass-through and
 * docs/decisions.md#d13-upstream-errors-on-native-routes-are-relayed): the client's body bytes reach the
 * provider unchanged (a model rename the only edit), the client's credentials never do, upstream errors come
 * back as they were minus the provider's key, and streams flow without buffering in both directions.
 */
import { request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import { expect } from 'chai';
import { request } from 'undici';
import { startFakeUpstream, type FakeUpstream, type SseEvent } from '../helpers/fake-upstream';
import { PROVIDER_KEYS, PROVIDER_SENTINEL, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import {
  anthropicError,
  anthropicMessage,
  anthropicStream,
  chatCompletion,
  chatStream,
  openaiError,
} from '../helpers/upstream-replies';

interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
}

/** A JSON chat body written with odd whitespace, unusual key order, escapes and a trailing newline. */
const CHAT_RAW =
  '{  "temperature" :0.25,"messages":[ {"content" : "caf\\u00e9  and  \\ud83d\\ude00  na\u00efve\\n\\ttab",' +
  '   "role":"user"} ] ,\n  "model":   "gpt-test" , "metadata":{"b":"2","a":"1"}, "n" : 1 }\n';

/** The same care for a Messages body. */
const MESSAGES_RAW =
  '{"max_tokens" : 16,\t"messages":[{"role":"user","content":"sch\\u00f6n  \\ud83d\\ude00 \u2014 \\"quoted\\""}],' +
  '\r\n "model":"claude-sonnet-5" ,  "metadata" : {"user_id" : "u-1"},"system":"  spaced  system  "}\n';

describe('e2e: native pass-through', () => {
  let fake: FakeUpstream;
  let tg: TestGateway;

  async function post(path: string, body: string, headers: Record<string, string>): Promise<RawResponse> {
    const response = await request(`${tg.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    return { status: response.statusCode, headers: response.headers, text: await response.body.text() };
  }

  /** A request through node:http, which (unlike undici) lets a client send hop-by-hop headers. */
  function postWithNodeHttp(path: string, body: string, headers: OutgoingHttpHeaders): Promise<RawResponse> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(`${tg.url}${path}`, { method: 'POST', headers, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  const chatAuth = () => ({ authorization: `Bearer ${tg.key}` });
  const messagesAuth = () => ({ 'x-api-key': tg.key, 'anthropic-version': '2023-06-01' });

  before(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ upstreamUrl: fake.url });
  });

  after(async () => {
    // The fake first: it cuts any upstream exchange still open, so the gateway's stop never waits on one.
    await fake?.close();
    await tg?.stop();
  });

  afterEach(() => fake.reset());

  describe('request body', () => {
    it('forwards a chat body byte for byte', async () => {
      const response = await post('/v1/chat/completions', CHAT_RAW, chatAuth());

      expect(response.status).to.equal(200);
      expect(fake.requests).to.have.length(1);
      expect(fake.requests[0].body.toString('utf8')).to.equal(CHAT_RAW);
      expect(fake.requests[0].body.equals(Buffer.from(CHAT_RAW, 'utf8'))).to.equal(true);
      expect(fake.requests[0].headers['content-length']).to.equal(String(Buffer.byteLength(CHAT_RAW)));
    });

    it('forwards a messages body byte for byte', async () => {
      const response = await post('/v1/messages', MESSAGES_RAW, messagesAuth());

      expect(response.status).to.equal(200);
      expect(fake.requests[0].body.toString('utf8')).to.equal(MESSAGES_RAW);
      expect(fake.requests[0].body.equals(Buffer.from(MESSAGES_RAW, 'utf8'))).to.equal(true);
    });

    it('renames only the model field for claude-renamed and keeps every other byte', async () => {
      // The public id also appears inside the conversation and metadata: only the `model` value changes.
      const before = '{ "messages" : [{"role":"user","content":"is \\"claude-renamed\\" your name? caf\\u00e9"}],\n "model" :  ';
      const after = ' ,"max_tokens":8, "metadata":{"user_id":"claude-renamed"} }\n';
      const raw = `${before}"claude-renamed"${after}`;

      const response = await post('/v1/messages', raw, messagesAuth());

      expect(response.status).to.equal(200);
      expect(fake.requests[0].body.toString('utf8')).to.equal(`${before}"claude-upstream-id"${after}`);
    });

    it('sends the upstream model id in the renamed request, visible in the parsed body', async () => {
      await post('/v1/messages', '{"model":"claude-renamed","max_tokens":8,"messages":[{"role":"user","content":"x"}]}', messagesAuth());

      expect(fake.requests[0].json()).to.deep.equal({
        model: 'claude-upstream-id',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'x' }],
      });
    });
  });

  describe('query string', () => {
    it('keeps beta=true on a Messages route and drops every other query parameter', async () => {
      const body = '{"model":"claude-sonnet-5","max_tokens":8,"messages":[{"role":"user","content":"x"}]}';
      const response = await post('/v1/messages?beta=true&key=leak', body, messagesAuth());

      expect(response.status).to.equal(200);
      expect(fake.requests[0].url).to.equal('/v1/messages?beta=true');
    });

    it('forwards no query string on a chat route', async () => {
      const body = '{"model":"gpt-test","messages":[{"role":"user","content":"x"}]}';
      const response = await post('/v1/chat/completions?beta=true', body, chatAuth());

      expect(response.status).to.equal(200);
      expect(fake.requests[0].url).to.equal('/v1/chat/completions');
    });
  });

  describe('request headers', () => {
    const credentialHeaders = () => ({
      authorization: `Bearer ${tg.key}`,
      'x-api-key': tg.key,
      cookie: `session=${tg.key}; theme=dark`,
      'api-key': tg.key,
      'x-goog-api-key': tg.key,
    });

    function expectNoClientCredential(index: number): void {
      const upstream = fake.requests[index];
      expect(upstream.rawHeaders.join('\n')).to.not.contain(tg.key);
      expect(upstream.headers).to.not.have.property('cookie');
      expect(upstream.headers).to.not.have.property('api-key');
      expect(upstream.headers).to.not.have.property('x-goog-api-key');
    }

    it('replaces every client credential with the provider key on the openai provider', async () => {
      const response = await post('/v1/chat/completions', '{"model":"gpt-test","messages":[{"role":"user","content":"k"}]}', credentialHeaders());

      expect(response.status).to.equal(200);
      expectNoClientCredential(0);
      expect(fake.requests[0].headers.authorization).to.equal(`Bearer ${PROVIDER_KEYS.openai}`);
      expect(fake.requests[0].headers).to.not.have.property('x-api-key');
    });

    it('replaces every client credential with the provider key on the anthropic provider', async () => {
      const response = await post(
        '/v1/messages',
        '{"model":"claude-sonnet-5","max_tokens":8,"messages":[{"role":"user","content":"k"}]}',
        { ...credentialHeaders(), 'anthropic-version': '2023-06-01' },
      );

      expect(response.status).to.equal(200);
      expectNoClientCredential(0);
      expect(fake.requests[0].headers['x-api-key']).to.equal(PROVIDER_KEYS.anthropic);
      expect(fake.requests[0].headers).to.not.have.property('authorization');
    });

    it('does not forward hop-by-hop headers', async () => {
      const body = '{"model":"claude-sonnet-5","max_tokens":8,"messages":[{"role":"user","content":"hop"}]}';

      const response = await postWithNodeHttp('/v1/messages', body, {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
        'x-api-key': tg.key,
        'anthropic-version': '2023-06-01',
        connection: 'keep-alive, x-hop-custom',
        'keep-alive': 'timeout=5, max=100',
        te: 'trailers',
        upgrade: 'h2c',
        'proxy-authorization': 'Basic dXNlcjpwYXNz',
        'x-hop-custom': 'should-stay-behind',
      });

      expect(response.status).to.equal(200);
      const upstream = fake.requests[0].headers;
      for (const name of ['keep-alive', 'te', 'upgrade', 'proxy-authorization', 'x-hop-custom']) {
        expect(upstream, name).to.not.have.property(name);
      }
      expect(String(upstream.connection ?? '')).to.not.contain('x-hop-custom');
    });
  });

  describe('response headers and errors', () => {
    it('does not relay an upstream set-cookie on chat', async () => {
      fake.enqueue(chatCompletion({ headers: { 'set-cookie': ['upstream_session=abc; Path=/', 'tracking=1'] } }));

      const response = await post('/v1/chat/completions', '{"model":"gpt-test","messages":[{"role":"user","content":"c"}]}', chatAuth());

      expect(response.status).to.equal(200);
      expect(response.headers).to.not.have.property('set-cookie');
    });

    it('does not relay an upstream set-cookie on messages', async () => {
      fake.enqueue(anthropicMessage({ headers: { 'set-cookie': 'upstream_session=abc; Path=/' } }));

      const response = await post(
        '/v1/messages',
        '{"model":"claude-sonnet-5","max_tokens":8,"messages":[{"role":"user","content":"c"}]}',
        messagesAuth(),
      );

      expect(response.status).to.equal(200);
      expect(response.headers).to.not.have.property('set-cookie');
    });

    it('relays an upstream 400 on messages with its status and body unchanged', async () => {
      const reply = anthropicError(400, 'invalid_request_error', 'prompt is too long: 250000 tokens > 200000 maximum');
      fake.enqueue(reply);

      const response = await post(
        '/v1/messages',
        '{"model":"claude-sonnet-5","max_tokens":8,"messages":[{"role":"user","content":"long"}]}',
        messagesAuth(),
      );

      expect(response.status).to.equal(400);
      expect(response.text).to.equal(JSON.stringify(reply.json));
      expect(response.headers['x-request-id']).to.be.a('string');
    });

    it('relays an upstream 400 on chat with its status and body unchanged', async () => {
      const reply = openaiError(400, "This model's maximum context length is 128000 tokens.", {
        code: 'context_length_exceeded',
        param: 'messages',
      });
      fake.enqueue(reply);

      const response = await post('/v1/chat/completions', '{"model":"gpt-test","messages":[{"role":"user","content":"long"}]}', chatAuth());

      expect(response.status).to.equal(400);
      expect(response.text).to.equal(JSON.stringify(reply.json));
    });

    it('turns an upstream 401 into 502 upstream_auth_failed without the provider key', async () => {
      fake.enqueue(openaiError(401, `Incorrect API key provided: ${PROVIDER_KEYS.openai}.`, { code: 'invalid_api_key' }));

      const response = await post('/v1/chat/completions', '{"model":"gpt-test","messages":[{"role":"user","content":"a"}]}', chatAuth());

      expect(response.status).to.equal(502);
      const body = JSON.parse(response.text) as { error: { code: string; type: string; message: string } };
      expect(body.error.code).to.equal('upstream_auth_failed');
      expect(response.text).to.not.contain(PROVIDER_SENTINEL);
      expect(JSON.stringify(response.headers)).to.not.contain(PROVIDER_SENTINEL);
    });

    it('turns an upstream 403 on messages into 502 in the messages shape without the provider key', async () => {
      fake.enqueue(anthropicError(403, 'permission_error', `key ${PROVIDER_KEYS.anthropic} may not use this model`));

      const response = await post(
        '/v1/messages',
        '{"model":"claude-sonnet-5","max_tokens":8,"messages":[{"role":"user","content":"a"}]}',
        messagesAuth(),
      );

      expect(response.status).to.equal(502);
      const body = JSON.parse(response.text) as { type: string; error: { type: string; message: string } };
      expect(body.type).to.equal('error');
      expect(body.error.type).to.equal('api_error');
      expect(response.text).to.not.contain(PROVIDER_SENTINEL);
    });

    it('scrubs the provider key from a relayed upstream error body', async () => {
      fake.enqueue(anthropicError(400, 'invalid_request_error', `request with key ${PROVIDER_KEYS.anthropic} (x-api-key) is malformed`));

      const response = await post(
        '/v1/messages',
        '{"model":"claude-sonnet-5","max_tokens":8,"messages":[{"role":"user","content":"s"}]}',
        messagesAuth(),
      );

      expect(response.status).to.equal(400);
      expect(response.text).to.not.contain(PROVIDER_SENTINEL);
      expect(response.text).to.contain('request with key ');
      expect(response.text).to.contain(' (x-api-key) is malformed');
    });

    it('scrubs the provider key from a relayed upstream 500 on chat', async () => {
      fake.enqueue(openaiError(500, `internal failure for Bearer ${PROVIDER_KEYS.openai}`));

      const response = await post('/v1/chat/completions', '{"model":"gpt-test","messages":[{"role":"user","content":"s"}]}', chatAuth());

      expect(response.status).to.equal(500);
      expect(response.text).to.not.contain(PROVIDER_SENTINEL);
      expect(response.text).to.contain('internal failure for Bearer ');
    });
  });

  describe('plain replies', () => {
    it('answers 502 in the endpoint shape when the upstream breaks off a plain reply mid-body', async () => {
      fake.enqueue({
        headers: { 'content-type': 'application/json' },
        events: [{ data: '{"id":"chatcmpl-cut","choices":[' }],
        thenReset: true,
      });
      const body = '{"model":"gpt-test","messages":[{"role":"user","content":"x"}]}';
      const response = await post('/v1/chat/completions', body, chatAuth());

      expect(response.status).to.equal(502);
      expect(JSON.parse(response.text).error).to.include({ type: 'server_error', code: 'upstream_unreachable' });
    });
  });

  describe('streaming', () => {
    /** The scripted stream with an 800 ms pause after its first event. */
    function pausedAfterFirst(events: readonly SseEvent[]): SseEvent[] {
      return [events[0], { pauseMs: 800 }, ...events.slice(1)];
    }

    /** Reads a streamed response; returns when the first complete SSE frame arrived, its data, and the whole text. */
    async function readStream(path: string, body: string, headers: Record<string, string>) {
      const started = Date.now();
      const response = await request(`${tg.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
      let text = '';
      let firstAt: number | null = null;
      let firstData: unknown = null;
      for await (const chunk of response.body) {
        text += (chunk as Buffer).toString('utf8');
        const end = text.indexOf('\n\n');
        if (firstAt === null && end !== -1) {
          firstAt = Date.now() - started;
          const dataLine = text.slice(0, end).split('\n').find((line) => line.startsWith('data: '));
          firstData = JSON.parse((dataLine ?? 'data: null').slice('data: '.length));
        }
      }
      return { status: response.statusCode, firstAt, firstData, text, total: Date.now() - started };
    }

    it('delivers the first messages event before the upstream pause ends', async () => {
      fake.enqueue({ ...anthropicStream(), events: pausedAfterFirst(anthropicStream().events) });

      const result = await readStream(
        '/v1/messages',
        '{"model":"claude-sonnet-5","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"s"}]}',
        messagesAuth(),
      );

      expect(result.status).to.equal(200);
      expect(result.firstData).to.deep.include({ type: 'message_start' });
      expect(result.firstAt).to.be.a('number').and.below(600);
      expect(result.total).to.be.at.least(800);
      expect(result.text).to.contain('event: message_stop');
    });

    it('delivers the first chat chunk before the upstream pause ends', async () => {
      fake.enqueue({ ...chatStream(), events: pausedAfterFirst(chatStream().events) });

      const result = await readStream(
        '/v1/chat/completions',
        '{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"s"}]}',
        chatAuth(),
      );

      expect(result.status).to.equal(200);
      expect(result.firstData).to.deep.include({ object: 'chat.completion.chunk' });
      expect(result.firstAt).to.be.a('number').and.below(600);
      expect(result.total).to.be.at.least(800);
      expect(result.text).to.contain('data: [DONE]');
    });

    it('ends a chat stream broken by the upstream with the events so far, one error frame and no [DONE]', async () => {
      fake.enqueue({ ...chatStream(), events: chatStream().events.slice(0, 3), thenReset: true });

      const result = await readStream(
        '/v1/chat/completions',
        '{"model":"gpt-test","stream":true,"messages":[{"role":"user","content":"s"}]}',
        chatAuth(),
      );

      const frames = result.text.split('\n\n').filter((frame) => frame !== '');
      expect(result.status).to.equal(200);
      expect(frames).to.have.length(4);
      expect(JSON.parse(frames[3].slice('data: '.length)).error).to.include({ code: 'stream_interrupted' });
      expect(result.text).to.not.contain('[DONE]');
    });

    it('ends a Messages stream broken by the upstream with an error event and no message_stop', async () => {
      fake.enqueue({ ...anthropicStream(), events: anthropicStream().events.slice(0, 3), thenReset: true });

      const result = await readStream(
        '/v1/messages',
        '{"model":"claude-sonnet-5","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"s"}]}',
        messagesAuth(),
      );

      const frames = result.text.split('\n\n').filter((frame) => frame !== '');
      expect(frames).to.have.length(4);
      expect(frames[3]).to.match(/^event: error\ndata: /);
      expect(JSON.parse(frames[3].split('data: ')[1])).to.deep.include({ type: 'error' });
      expect(result.text).to.not.contain('message_stop');
    });

    it('aborts the upstream request when the client disconnects mid-stream', async () => {
      fake.enqueue({ ...anthropicStream(), events: anthropicStream().events.slice(0, 2), thenHang: true });
      const controller = new AbortController();

      const response = await request(`${tg.url}/v1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...messagesAuth() },
        body: '{"model":"claude-sonnet-5","max_tokens":8,"stream":true,"messages":[{"role":"user","content":"bye"}]}',
        signal: controller.signal,
      });
      expect(response.statusCode).to.equal(200);
      // Give up after 2 s so a gateway that buffers fails here rather than hanging the suite.
      const giveUp = setTimeout(() => controller.abort(), 2000);
      let sawStart = false;
      try {
        for await (const chunk of response.body) {
          if ((chunk as Buffer).toString('utf8').includes('message_start')) {
            sawStart = true;
            break;
          }
        }
      } catch {
        // aborted by giveUp
      } finally {
        clearTimeout(giveUp);
      }
      expect(sawStart, 'the first event reached the client').to.equal(true);
      const disconnectedAt = Date.now();
      controller.abort();
      response.body.destroy();

      const closedAt = await fake.waitForClose(0, 1000);
      expect(closedAt - disconnectedAt).to.be.below(1000);
    });
  });
});
