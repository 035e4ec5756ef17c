/**
 * A body Tollgate could read otherwise than the provider is refused before anything is forwarded
 * (docs/decisions.md#d18-a-body-is-read-one-way-or-refused): a premium field that is not a string
 * (`service_tier: ["priority"]` or an object, an `anthropic_beta` entry), a premium value in another
 * case (`speed: "FAST"` is fast mode, priced or refused as "fast"), and a key twice in one object, at
 * the top level or deep in the messages. Each on /v1/chat/completions, /v1/responses and /v1/messages,
 * in the endpoint's own error shape, and on a WebSocket frame; the fake upstream sees none of them.
 */
import { expect } from 'chai';
import WebSocket from 'ws';
import { unitsToNano } from '../../src/billing/money';
import type { ChargeRecord } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { chatCompletion, responsesObject } from '../helpers/upstream-replies';

const PRICE = 'input: 1, cache_write: 1.25, cache_hit: 0.1, output: 5';
const TIERS = 'tiers: { priority: { input: 2, output: 10 }, fast: { input: 6, output: 30 } }';

function yamlFor(upstreamUrl: string): string {
  return `
version: 1
server: { host: 127.0.0.1, shutdown_unready_ms: 0 }
store: { url: "sqlite::memory:" }
providers:
  anthropic: { protocol: anthropic, base_url: ${upstreamUrl}, api_key: ${PROVIDER_KEYS.anthropic} }
  openai: { protocol: openai, base_url: ${upstreamUrl}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  gpt-plain: { family: openai, routes: [{ provider: openai }], price: { ${PRICE} }, max_output_tokens: 100, context_window: 200000 }
  gpt-free: { family: openai, routes: [{ provider: openai }], free: true }
  claude-free: { family: anthropic, routes: [{ provider: anthropic }], free: true }
  claude-plain: { family: anthropic, routes: [{ provider: anthropic }], price: { ${PRICE} }, max_output_tokens: 100, context_window: 200000 }
  claude-tiers: { family: anthropic, routes: [{ provider: anthropic }], price: { ${PRICE}, ${TIERS} }, max_output_tokens: 100, context_window: 200000 }
plugins:
  billing: { flush_interval_ms: 10 }
  upstream: { failover: { max_attempts: 1 } }
`;
}

interface Endpoint {
  readonly path: string;
  readonly shape: 'openai' | 'anthropic';
  /** A valid body for `model`, as raw JSON text, with `extra` (raw JSON members) appended at the top level. */
  body(model: string, extra?: string, messages?: string): string;
  readonly model: string;
}

const USER_MESSAGE = '[{"role":"user","content":"Hi"}]';

const ENDPOINTS: readonly Endpoint[] = [
  {
    path: '/v1/chat/completions',
    shape: 'openai',
    model: 'gpt-plain',
    body: (model, extra = '', messages = USER_MESSAGE) => `{"model":"${model}","messages":${messages}${extra}}`,
  },
  {
    path: '/v1/responses',
    shape: 'openai',
    model: 'gpt-plain',
    body: (model, extra = '', messages = USER_MESSAGE) => `{"model":"${model}","input":${messages}${extra}}`,
  },
  {
    path: '/v1/messages',
    shape: 'anthropic',
    model: 'claude-plain',
    body: (model, extra = '', messages = USER_MESSAGE) => `{"model":"${model}","max_tokens":16,"messages":${messages}${extra}}`,
  },
];

interface Refusal {
  readonly status: number;
  /** OpenAI `error.code`, or the Anthropic `error.type`. */
  readonly kind: string;
  readonly message: string;
  readonly param?: unknown;
}

describe('e2e: ambiguous request bodies are refused before they are forwarded', () => {
  let fake: FakeUpstream;
  let tg: TestGateway;

  before(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: yamlFor(fake.url) });
    await tg.store.credit({ accountId: tg.accountId, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: 'start' });
  });
  after(async () => {
    await tg.stop();
    await fake.close();
  });
  beforeEach(() => fake.reset());

  async function post(pathname: string, raw: string): Promise<Response> {
    return fetch(`${tg.url}${pathname}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${tg.key}`, 'anthropic-version': '2023-06-01' },
      body: raw,
    });
  }

  /** Posts `raw` and reads the refusal, checking that nothing reached the provider and that it is in the endpoint's own shape. */
  async function refusal(endpoint: Endpoint, raw: string): Promise<Refusal> {
    const answer = await post(endpoint.path, raw);
    expect(fake.requests, `nothing reached the provider: ${raw}`).to.have.length(0);
    const json = (await answer.json()) as Record<string, unknown> & { error: Record<string, unknown> };
    if (endpoint.shape === 'anthropic') {
      expect(json.type, 'the Messages error shape').to.equal('error');
      expect(Object.keys(json.error)).to.have.members(['type', 'message']);
      return { status: answer.status, kind: json.error.type as string, message: json.error.message as string };
    }
    expect(Object.keys(json.error), 'the OpenAI error shape').to.have.members(['message', 'type', 'param', 'code']);
    expect(json.error.type).to.equal('invalid_request_error');
    return { status: answer.status, kind: json.error.code as string, message: json.error.message as string, param: json.error.param };
  }

  const invalid = (endpoint: Endpoint, code: string) => (endpoint.shape === 'anthropic' ? 'invalid_request_error' : code);

  for (const endpoint of ENDPOINTS) {
    describe(endpoint.path, () => {
      for (const [what, value] of [
        ['a list', '["priority"]'],
        ['an object', '{"tier":"priority"}'],
        ['a number', '1'],
      ] as const) {
        it(`refuses service_tier as ${what} with a 400 naming the field`, async () => {
          const answer = await refusal(endpoint, endpoint.body(endpoint.model, `,"service_tier":${value}`));
          expect(answer).to.deep.include({ status: 400, kind: invalid(endpoint, 'invalid_value'), message: "Invalid value for 'service_tier': expected string." });
          if (endpoint.shape === 'openai') expect(answer.param).to.equal('service_tier');
        });
      }

      it('refuses a non-string service_tier on a free model too: it is read by type before anything is priced', async () => {
        const model = endpoint.shape === 'openai' ? 'gpt-free' : 'claude-free';
        expect((await refusal(endpoint, endpoint.body(model, ',"service_tier":["priority"]'))).status).to.equal(400);
      });

      it('refuses service_tier twice at the top level, whichever copy a parser would keep', async () => {
        for (const pair of ['"service_tier":"auto","service_tier":"priority"', '"service_tier":"priority","service_tier":"auto"']) {
          const answer = await refusal(endpoint, endpoint.body(endpoint.model, `,${pair}`));
          expect(answer).to.deep.include({
            status: 400,
            kind: invalid(endpoint, 'duplicate_key'),
            message: 'The request body has the key "service_tier" twice in one object; send each key once.',
          });
        }
      });

      it('refuses a key twice deep in the messages', async () => {
        const messages = '[{"role":"user","content":[{"type":"text","text":"Hi","text":"Bye"}]}]';
        const answer = await refusal(endpoint, endpoint.body(endpoint.model, '', messages));
        expect(answer).to.deep.include({ status: 400, kind: invalid(endpoint, 'duplicate_key'), message: 'The request body has the key "text" twice in one object; send each key once.' });
        const twoRoles = await refusal(endpoint, endpoint.body(endpoint.model, '', '[{"role":"user","content":"Hi","role":"system"}]'));
        expect(twoRoles).to.deep.include({ status: 400, kind: invalid(endpoint, 'duplicate_key') });
      });
    });
  }

  describe('premium values in another case', () => {
    it('reads service_tier in any case on chat and Responses: "PRIORITY" refused where priority is not priced, "DEFAULT" and "Auto" passed as standard', async () => {
      for (const endpoint of ENDPOINTS.filter((each) => each.shape === 'openai')) {
        const answer = await refusal(endpoint, endpoint.body('gpt-plain', ',"service_tier":"PRIORITY"'));
        expect(answer, endpoint.path).to.deep.include({ status: 400, kind: 'service_not_offered', message: 'service_tier "PRIORITY" is not offered for model gpt-plain.', param: 'service_tier' });
        for (const tier of ['DEFAULT', 'Auto']) {
          fake.enqueue(endpoint.path === '/v1/responses' ? responsesObject() : chatCompletion());
          const served = await post(endpoint.path, endpoint.body('gpt-plain', `,"service_tier":"${tier}"`));
          expect(served.status, `${endpoint.path} ${tier}: ${await served.text()}`).to.equal(200);
        }
        fake.reset();
      }
    });

    it('refuses speed "FAST" on Messages where fast mode is not priced, as "fast" is', async () => {
      const messages = ENDPOINTS[2];
      for (const speed of ['FAST', 'Fast']) {
        const answer = await refusal(messages, messages.body('claude-plain', `,"speed":"${speed}"`));
        expect(answer).to.deep.include({ status: 400, kind: 'invalid_request_error', message: `speed "${speed}" is not offered for model claude-plain.` });
      }
    });

    it('refuses speed, or an anthropic_beta entry, that is not a string', async () => {
      const messages = ENDPOINTS[2];
      for (const [extra, field] of [
        [',"speed":["fast"]', 'speed'],
        [',"speed":{"mode":"fast"}', 'speed'],
        [',"anthropic_beta":[{"name":"fast-mode-2026-02-01"}]', 'anthropic_beta[0]'],
        [',"anthropic_beta":"fast-mode-2026-02-01"', 'anthropic_beta'],
      ] as const) {
        const answer = await refusal(messages, messages.body('claude-tiers', extra));
        expect(answer.status, extra).to.equal(400);
        expect(answer.message, extra).to.match(new RegExp(`^Invalid value for '${field.replace(/[[\]]/g, '\\$&')}': expected `));
      }
    });
  });

  describe('on a WebSocket frame', () => {
    it('answers a frame with a key twice with an error frame, keeps the socket open and forwards nothing', async () => {
      const ws = new WebSocket(`${tg.url.replace('http', 'ws')}/v1/responses`, { headers: { authorization: `Bearer ${tg.key}` } });
      await new Promise<void>((resolve, reject) => {
        ws.once('open', () => resolve());
        ws.once('error', reject);
      });
      try {
        const next = () => new Promise<Record<string, unknown>>((resolve) => ws.once('message', (data) => resolve(JSON.parse((data as Buffer).toString("utf8")) as Record<string, unknown>)));
        for (const frame of [
          '{"type":"response.create","model":"gpt-plain","input":"Hi","service_tier":"auto","service_tier":"priority"}',
          '{"type":"response.create","model":"gpt-plain","input":[{"role":"user","content":"Hi","content":"Bye"}]}',
        ]) {
          const answer = next();
          ws.send(frame);
          const event = await answer;
          expect(event.type).to.equal('error');
          expect(event).to.deep.include({ status: 400 });
          expect((event.error as Record<string, unknown>).code).to.equal('duplicate_key');
        }
        expect(ws.readyState).to.equal(WebSocket.OPEN);
        expect(fake.requests, 'nothing reached the provider').to.have.length(0);
      } finally {
        ws.close();
      }
    });
  });
});

describe('e2e: speed "FAST" is held as fast mode', () => {
  let fake: FakeUpstream;
  let tg: TestGateway;

  before(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: yamlFor(fake.url) });
    await tg.store.credit({ accountId: tg.accountId, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: 'start' });
  });
  after(async () => {
    await tg.stop();
    await fake.close();
  });

  async function heldFor(speed: string): Promise<bigint> {
    fake.enqueue({
      status: 200,
      json: {
        id: 'msg_1',
        type: 'message',
        role: 'assistant',
        model: 'claude-tiers',
        content: [{ type: 'text', text: 'Hi' }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 5, output_tokens: 1, service_tier: 'standard' },
      },
    });
    // Bodies of one length, so their holds differ by the level held at and nothing else.
    const body = `{"model":"claude-tiers","max_tokens":16,"service_tier":"standard_only","speed":"${speed}","messages":[{"role":"user","content":"Hi"}]}`;
    const answer = await fetch(`${tg.url}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${tg.key}`, 'anthropic-version': '2023-06-01' },
      body,
    });
    expect(answer.status).to.equal(200);
    await answer.text();
    const requestId = answer.headers.get('x-request-id')!;
    const deadline = Date.now() + 5000;
    let charge: ChargeRecord | undefined;
    while (charge === undefined && Date.now() < deadline) {
      charge = (await tg.store.listCharges({ limit: 100 })).find((each) => each.requestId === requestId);
      if (charge === undefined) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    if (charge === undefined) throw new Error(`no charge for ${requestId}`);
    return charge.held;
  }

  it('holds "FAST" and "Fast" at the fast rates, exactly as "fast", above a standard request', async () => {
    const fast = await heldFor('fast');
    expect(await heldFor('FAST')).to.equal(fast);
    expect(await heldFor('Fast')).to.equal(fast);
    expect((await heldFor('none')) < fast, 'a standard request holds less').to.equal(true);
  });
});
