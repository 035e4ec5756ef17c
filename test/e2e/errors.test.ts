/**
 * Every request the gateway refuses on its own: bad bodies, bad keys, unknown models and paths, an
 * unconfigured provider. Each answer has the right status, the endpoint's own error shape and an
 * x-request-id, is never a 500, and the upstream never hears of the request.
 */
import { Readable } from 'node:stream';
import { expect } from 'chai';
import Anthropic from '@anthropic-ai/sdk';
import { request } from 'undici';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, TEST_MAX_BODY_BYTES, TEST_MAX_JSON_DEPTH, type TestGateway } from '../helpers/test-gateway';

type Shape = 'chat' | 'messages';

interface RawResponse {
  readonly status: number;
  readonly requestId: unknown;
  readonly text: string;
}

interface ChatErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

interface MessagesErrorBody {
  type: string;
  error: { type: string; message: string };
}

/** A refused request and what the gateway must answer. */
interface Case {
  readonly name: string;
  readonly method?: 'GET' | 'POST';
  readonly path: string;
  readonly body?: string;
  /** Which credential to send: the endpoint's usual header (default) or none. */
  readonly auth?: 'bearer' | 'x-api-key' | 'none';
  readonly status: number;
  readonly shape: Shape;
  /** Chat shape: `error.code`; messages shape: `error.type`. */
  readonly code: string;
  /** Chat shape only: `error.param`, when the case names one. */
  readonly param?: string | null;
  /** Fragments the message must contain. */
  readonly says?: readonly string[];
}

const USER_MESSAGE = '[{"role":"user","content":"hello"}]';

/** A JSON body whose `metadata` nests `depth` arrays deep (the object itself is depth 1). */
function nested(model: string, depth: number, extra = ''): string {
  return `{"model":"${model}",${extra}"messages":${USER_MESSAGE},"metadata":${'['.repeat(depth)}${']'.repeat(depth)}}`;
}

/** A valid body just over the size limit. */
function oversized(model: string, extra = ''): string {
  const filler = 'a'.repeat(TEST_MAX_BODY_BYTES + 16);
  return `{"model":"${model}",${extra}"messages":[{"role":"user","content":"${filler}"}]}`;
}

const CHAT_CASES: readonly Case[] = [
  { name: 'malformed JSON', path: '/v1/chat/completions', body: '{"model":"gpt-test",', status: 400, shape: 'chat', code: 'invalid_json' },
  { name: 'an empty body', path: '/v1/chat/completions', body: '', status: 400, shape: 'chat', code: 'invalid_json' },
  { name: 'a JSON array body', path: '/v1/chat/completions', body: '[]', status: 400, shape: 'chat', code: 'invalid_request_body' },
  {
    name: 'a missing model',
    path: '/v1/chat/completions',
    body: `{"messages":${USER_MESSAGE}}`,
    status: 400,
    shape: 'chat',
    code: 'invalid_value',
    param: 'model',
    says: ['model'],
  },
  {
    name: 'missing messages',
    path: '/v1/chat/completions',
    body: '{"model":"gpt-test"}',
    status: 400,
    shape: 'chat',
    code: 'invalid_value',
    param: 'messages',
    says: ['messages'],
  },
  {
    name: 'an empty messages array',
    path: '/v1/chat/completions',
    body: '{"model":"gpt-test","messages":[]}',
    status: 400,
    shape: 'chat',
    code: 'invalid_value',
    param: 'messages',
    says: ['at least one message is required'],
  },
  {
    name: 'a body over server.max_body_bytes',
    path: '/v1/chat/completions',
    body: oversized('gpt-test'),
    status: 413,
    shape: 'chat',
    code: 'request_too_large',
    says: [String(TEST_MAX_BODY_BYTES)],
  },
  {
    name: 'nesting deeper than server.max_json_depth',
    path: '/v1/chat/completions',
    body: nested('gpt-test', TEST_MAX_JSON_DEPTH + 8),
    status: 400,
    shape: 'chat',
    code: 'json_too_deep',
  },
  {
    name: 'a __proto__ key',
    path: '/v1/chat/completions',
    body: `{"model":"gpt-test","messages":${USER_MESSAGE},"__proto__":{"isAdmin":true}}`,
    status: 400,
    shape: 'chat',
    code: 'forbidden_key',
    says: ['__proto__'],
  },
  {
    name: 'an unknown model',
    path: '/v1/chat/completions',
    body: `{"model":"gpt-nonexistent","messages":${USER_MESSAGE}}`,
    status: 404,
    shape: 'chat',
    code: 'model_not_found',
    param: 'model',
    says: ['gpt-nonexistent'],
  },
  {
    name: 'a missing model on /v1/responses',
    path: '/v1/responses',
    body: '{"input":"hello"}',
    status: 400,
    shape: 'chat',
    code: 'invalid_value',
    param: 'model',
  },
  {
    name: 'an unknown model on /v1/responses',
    path: '/v1/responses',
    body: '{"model":"gpt-nonexistent","input":"hello"}',
    status: 404,
    shape: 'chat',
    code: 'model_not_found',
  },
];

const MESSAGES_CASES: readonly Case[] = [
  { name: 'malformed JSON', path: '/v1/messages', body: '{"model": "claude-sonnet-5"', status: 400, shape: 'messages', code: 'invalid_request_error' },
  {
    name: 'a missing model',
    path: '/v1/messages',
    body: `{"max_tokens":16,"messages":${USER_MESSAGE}}`,
    status: 400,
    shape: 'messages',
    code: 'invalid_request_error',
    says: ['model'],
  },
  {
    name: 'a missing max_tokens',
    path: '/v1/messages',
    body: `{"model":"claude-sonnet-5","messages":${USER_MESSAGE}}`,
    status: 400,
    shape: 'messages',
    code: 'invalid_request_error',
    says: ['max_tokens'],
  },
  {
    name: 'missing messages',
    path: '/v1/messages',
    body: '{"model":"claude-sonnet-5","max_tokens":16}',
    status: 400,
    shape: 'messages',
    code: 'invalid_request_error',
    says: ['messages'],
  },
  {
    name: 'an empty messages array',
    path: '/v1/messages',
    body: '{"model":"claude-sonnet-5","max_tokens":16,"messages":[]}',
    status: 400,
    shape: 'messages',
    code: 'invalid_request_error',
    says: ['at least one message is required'],
  },
  {
    name: 'a body over server.max_body_bytes',
    path: '/v1/messages',
    body: oversized('claude-sonnet-5', '"max_tokens":16,'),
    status: 413,
    shape: 'messages',
    code: 'request_too_large',
  },
  {
    name: 'nesting deeper than server.max_json_depth',
    path: '/v1/messages',
    body: nested('claude-sonnet-5', TEST_MAX_JSON_DEPTH + 8, '"max_tokens":16,'),
    status: 400,
    shape: 'messages',
    code: 'invalid_request_error',
  },
  {
    name: 'a __proto__ key',
    path: '/v1/messages',
    body: `{"model":"claude-sonnet-5","max_tokens":16,"messages":[{"role":"user","content":"x","__proto__":{"polluted":1}}]}`,
    status: 400,
    shape: 'messages',
    code: 'invalid_request_error',
  },
  {
    name: 'an unknown model',
    path: '/v1/messages',
    body: `{"model":"claude-nonexistent","max_tokens":16,"messages":${USER_MESSAGE}}`,
    status: 404,
    shape: 'messages',
    code: 'not_found_error',
    says: ['claude-nonexistent'],
  },
  {
    name: 'an unknown model on count_tokens',
    path: '/v1/messages/count_tokens',
    body: `{"model":"claude-nonexistent","messages":${USER_MESSAGE}}`,
    status: 404,
    shape: 'messages',
    code: 'not_found_error',
  },
];

const PATH_CASES: readonly Case[] = [
  {
    name: 'GET /v1/models (unshipped)',
    method: 'GET',
    path: '/v1/models',
    status: 404,
    shape: 'chat',
    code: 'unknown_url',
    says: ['/v1/models'],
  },
  {
    name: 'an unknown POST path',
    path: '/v1/completely/unknown',
    body: '{}',
    status: 404,
    shape: 'chat',
    code: 'unknown_url',
    says: ['/v1/completely/unknown'],
  },
  {
    // Served at /v1/images/generations since images were built; without /v1 it is a wrong base URL.
    name: 'POST /images/generations (wrong base URL for OpenAI clients)',
    path: '/images/generations',
    body: '{"model":"gpt-image-1","prompt":"a cat"}',
    status: 404,
    shape: 'chat',
    code: 'unknown_url',
    says: ['/v1 as base URL'],
  },
  ...['/v1/v1/messages', '//v1/messages', '/messages'].map(
    (path): Case => ({
      name: `POST ${path} (wrong base URL for messages clients)`,
      path,
      body: `{"model":"claude-sonnet-5","max_tokens":16,"messages":${USER_MESSAGE}}`,
      auth: 'x-api-key',
      status: 404,
      shape: 'messages',
      code: 'not_found_error',
      says: ['bare host'],
    }),
  ),
];

describe('e2e: gateway-made errors', () => {
  let fake: FakeUpstream;
  let tg: TestGateway;

  async function send(
    path: string,
    options: { method?: 'GET' | 'POST'; body?: string; headers?: Record<string, string> } = {},
  ): Promise<RawResponse> {
    const method = options.method ?? 'POST';
    const response = await request(`${tg.url}${path}`, {
      method,
      headers: method === 'POST' ? { 'content-type': 'application/json', ...options.headers } : options.headers,
      body: method === 'POST' ? (options.body ?? '') : undefined,
    });
    return { status: response.statusCode, requestId: response.headers['x-request-id'], text: await response.body.text() };
  }

  function credential(auth: 'bearer' | 'x-api-key' | 'none', key: string): Record<string, string> {
    if (auth === 'bearer') return { authorization: `Bearer ${key}` };
    if (auth === 'x-api-key') return { 'x-api-key': key, 'anthropic-version': '2023-06-01' };
    return {};
  }

  /** Checks status, x-request-id and the shape; returns the error message. */
  function expectError(response: RawResponse, status: number, shape: Shape, code: string, param?: string | null): string {
    expect(response.status, response.text).to.equal(status);
    expect(response.requestId).to.be.a('string').and.not.equal('');
    const body = JSON.parse(response.text) as unknown;
    if (shape === 'chat') {
      const chat = body as ChatErrorBody;
      expect(chat.error).to.include.all.keys('message', 'type', 'param', 'code');
      expect(chat.error.code).to.equal(code);
      expect(chat.error.type).to.be.a('string');
      if (param !== undefined) expect(chat.error.param).to.equal(param);
      expect(chat.error.message).to.be.a('string').and.not.equal('');
      return chat.error.message;
    }
    const messages = body as MessagesErrorBody;
    expect(messages.type).to.equal('error');
    expect(messages.error.type).to.equal(code);
    expect(messages.error.message).to.be.a('string').and.not.equal('');
    return messages.error.message;
  }

  function runCase(testCase: Case): void {
    it(`answers ${testCase.status} for ${testCase.name} on ${testCase.method ?? 'POST'} ${testCase.path}`, async () => {
      const auth = testCase.auth ?? (testCase.shape === 'messages' ? 'x-api-key' : 'bearer');
      const response = await send(testCase.path, {
        method: testCase.method,
        body: testCase.body,
        headers: credential(auth, tg.key),
      });

      const message = expectError(response, testCase.status, testCase.shape, testCase.code, testCase.param);
      for (const fragment of testCase.says ?? []) expect(message).to.contain(fragment);
      expect(fake.requests).to.have.length(0);
    });
  }

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

  describe('validation on chat and responses', () => {
    CHAT_CASES.forEach(runCase);

    it('uses the invalid_request_error type for every chat validation error', async () => {
      const response = await send('/v1/chat/completions', { body: '{"model":"gpt-test","messages":[]}', headers: credential('bearer', tg.key) });

      expect((JSON.parse(response.text) as ChatErrorBody).error.type).to.equal('invalid_request_error');
    });

    it('leaves Object.prototype untouched after a __proto__ body', async () => {
      await send('/v1/chat/completions', {
        body: `{"model":"gpt-test","messages":${USER_MESSAGE},"__proto__":{"pollutedByE2e":true}}`,
        headers: credential('bearer', tg.key),
      });

      expect(({} as Record<string, unknown>).pollutedByE2e).to.equal(undefined);
    });

    it('answers 413 for a chunked body that grows past server.max_body_bytes', async () => {
      async function* growing(): AsyncGenerator<Buffer> {
        yield Buffer.from('{"model":"gpt-test","messages":[{"role":"user","content":"');
        for (let i = 0; i < 4 * (TEST_MAX_BODY_BYTES / 1024); i += 1) yield Buffer.alloc(1024, 'a');
        yield Buffer.from('"}]}');
      }
      const response = await request(`${tg.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${tg.key}` },
        body: Readable.from(growing()),
      });
      const raw: RawResponse = { status: response.statusCode, requestId: response.headers['x-request-id'], text: await response.body.text() };

      expectError(raw, 413, 'chat', 'request_too_large');
      expect(fake.requests).to.have.length(0);
    });

    it('accepts nesting exactly at server.max_json_depth', async () => {
      // The object is level 1, so metadata may hold depth - 1 arrays.
      const response = await send('/v1/chat/completions', {
        body: nested('gpt-test', TEST_MAX_JSON_DEPTH - 1),
        headers: credential('bearer', tg.key),
      });

      expect(response.status, response.text).to.equal(200);
      expect(fake.requests).to.have.length(1);
    });
  });

  describe('validation on messages', () => {
    MESSAGES_CASES.forEach(runCase);
  });

  describe('paths', () => {
    PATH_CASES.forEach(runCase);

    it('names the bare host in the wrong-base-URL message', async () => {
      const response = await send('/v1/v1/messages', {
        body: `{"model":"claude-sonnet-5","max_tokens":16,"messages":${USER_MESSAGE}}`,
        headers: credential('x-api-key', tg.key),
      });

      expect((JSON.parse(response.text) as MessagesErrorBody).error.message).to.contain(tg.url);
    });

    it('gives the Anthropic SDK with a /v1 base URL a NotFoundError that mentions the bare host', async () => {
      const misconfigured = new Anthropic({ baseURL: `${tg.url}/v1`, apiKey: tg.key, maxRetries: 0 });

      const err = await misconfigured.messages
        .create({ model: 'claude-sonnet-5', max_tokens: 16, messages: [{ role: 'user', content: 'hello' }] })
        .then(() => null, (e: unknown) => e);

      expect(err).to.be.instanceOf(Anthropic.NotFoundError);
      const notFound = err as InstanceType<typeof Anthropic.NotFoundError>;
      expect(notFound.status).to.equal(404);
      expect(notFound.message).to.contain('bare host');
      expect(fake.requests).to.have.length(0);
    });
  });

  describe('authentication', () => {
    const endpoints = [
      {
        label: 'chat',
        path: '/v1/chat/completions',
        body: `{"model":"gpt-test","messages":${USER_MESSAGE}}`,
        auth: 'bearer' as const,
        other: 'x-api-key' as const,
        shape: 'chat' as const,
        code: 'invalid_api_key',
      },
      {
        label: 'messages',
        path: '/v1/messages',
        body: `{"model":"claude-sonnet-5","max_tokens":16,"messages":${USER_MESSAGE}}`,
        auth: 'x-api-key' as const,
        other: 'bearer' as const,
        shape: 'messages' as const,
        code: 'authentication_error',
      },
    ];

    for (const endpoint of endpoints) {
      const badKeys: ReadonlyArray<readonly [string, () => string | null]> = [
        ['a missing key', () => null],
        ['a wrong key', () => `sk-${'Q'.repeat(48)}`],
        ['a truncated key', () => tg.key.slice(0, -6)],
        ['a key with the wrong prefix', () => `pk-${tg.key.slice(3)}`],
        ['a key of another format', () => 'not-a-key'],
        ['an oversized key', () => `sk-${'A'.repeat(600)}`],
      ];
      for (const [name, keyOf] of badKeys) {
        it(`answers 401 for ${name} on ${endpoint.label}`, async () => {
          const key = keyOf();
          const response = await send(endpoint.path, {
            body: endpoint.body,
            headers: key === null ? {} : credential(endpoint.auth, key),
          });

          const message = expectError(response, 401, endpoint.shape, endpoint.code);
          if (key !== null) expect(message).to.not.contain(key);
          expect(fake.requests).to.have.length(0);
        });
      }

      it(`answers 401 at once for a revoked key on ${endpoint.label}`, async () => {
        const issued = await tg.createKey();
        const ok = await send(endpoint.path, { body: endpoint.body, headers: credential(endpoint.auth, issued.key) });
        expect(ok.status, ok.text).to.equal(200);

        expect(await tg.store.revokeKey(issued.id)).to.equal(true);
        const response = await send(endpoint.path, { body: endpoint.body, headers: credential(endpoint.auth, issued.key) });

        expectError(response, 401, endpoint.shape, endpoint.code);
        expect(fake.requests).to.have.length(1);
      });

      it(`answers 401 for an expired key on ${endpoint.label}`, async () => {
        const expired = await tg.createKey({ expiresAt: new Date(Date.now() - 60_000) });

        const response = await send(endpoint.path, { body: endpoint.body, headers: credential(endpoint.auth, expired.key) });

        expectError(response, 401, endpoint.shape, endpoint.code);
        expect(fake.requests).to.have.length(0);
      });

      it(`answers every bad key on ${endpoint.label} with the same body, request id aside`, async () => {
        const bodies = new Set<string>();
        for (const key of [null, `sk-${'Q'.repeat(48)}`, tg.key.slice(0, -6), 'not-a-key']) {
          const response = await send(endpoint.path, { body: endpoint.body, headers: key === null ? {} : credential(endpoint.auth, key) });
          bodies.add(response.text.split(String(response.requestId)).join('<id>'));
        }

        expect([...bodies]).to.have.length(1);
      });

      it(`accepts the ${endpoint.other} header on ${endpoint.label}`, async () => {
        const response = await send(endpoint.path, { body: endpoint.body, headers: credential(endpoint.other, tg.key) });

        expect(response.status, response.text).to.equal(200);
        expect(fake.requests).to.have.length(1);
      });
    }
  });

  describe('unconfigured provider', () => {
    it('answers 503 with a clear message for a model whose provider has no api_key', async () => {
      const response = await send('/v1/messages', {
        body: `{"model":"claude-nokey","max_tokens":16,"messages":${USER_MESSAGE}}`,
        headers: credential('x-api-key', tg.key),
      });

      const message = expectError(response, 503, 'messages', 'api_error');
      expect(message).to.contain('claude-nokey');
      expect(message.toLowerCase()).to.contain('api key');
      expect(fake.requests).to.have.length(0);
    });
  });
});
