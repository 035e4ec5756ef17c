/**
 * Premium service a client can ask the provider for is priced, or refused: service tiers (OpenAI
 * `service_tier` priority and flex; Anthropic `usage.service_tier`, fast mode's `speed`), long context
 * (every token of a request above 200,000 input tokens at other rates) and the anthropic-beta names
 * that ask for them. The charge follows the tier the reply reports; the hold covers the dearest level
 * the request can reach; what a model does not price is a 400 before the provider is called; the
 * provider-account headers never leave. Plain and streamed, both protocols, on the embedded store and
 * on PostgreSQL + Redis (skipped, saying so, without them).
 *
 * Rates per 1M tokens, so per token in nano-units (input / cache write / cache hit / output):
 *   standard      1 / 1.25 / 0.1 / 5       →  1,000 / 1,250 / 100 / 5,000
 *   priority      2 / 2.5  / 0.2 / 10      →  2,000 / 2,500 / 200 / 10,000
 *   flex          0.5 / –  / 0.05 / 2.5    →    500 /   500 /  50 / 2,500
 *   fast          6 / 7.5  / 0.6 / 30      →  6,000 / 7,500 / 600 / 30,000
 *   long context  2 / 2.5  / 0.2 / 7.5     →  2,000 / 2,500 / 200 / 7,500   (above 200,000 input tokens)
 */
import { expect } from 'chai';
import { unitsToNano } from '../../src/billing/money';
import { costOf, priceOfSnapshot } from '../../src/billing/prices';
import type { ChargeRecord } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream, type JsonReply, type SseEvent, type SseReply } from '../helpers/fake-upstream';
import { onEachBackend, type Backend } from '../helpers/backends';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';

const STANDARD = 'input: 1, cache_write: 1.25, cache_write_1h: 2, cache_hit: 0.1, output: 5';
const PRIORITY = 'priority: { input: 2, cache_write: 2.5, cache_hit: 0.2, output: 10 }';
const FLEX = 'flex: { input: 0.5, cache_hit: 0.05, output: 2.5 }';
const FAST = 'fast: { input: 6, cache_write: 7.5, cache_hit: 0.6, output: 30 }';
const LONG = 'long_context: { above_input_tokens: 200000, input: 2, cache_write: 2.5, cache_hit: 0.2, output: 7.5 }';

function yamlFor(upstreamUrl: string, backend: Backend): string {
  return `
version: 1
server: { host: 127.0.0.1 }
${backend.sections}
providers:
  anthropic: { protocol: anthropic, base_url: ${upstreamUrl}, api_key: ${PROVIDER_KEYS.anthropic} }
  openai: { protocol: openai, base_url: ${upstreamUrl}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  gpt-tiers: { family: openai, routes: [{ provider: openai }], price: { ${STANDARD}, tiers: { ${PRIORITY}, ${FLEX} } }, max_output_tokens: 1000, context_window: 400000 }
  gpt-plain: { family: openai, routes: [{ provider: openai }], price: { ${STANDARD} }, max_output_tokens: 1000, context_window: 400000 }
  claude-tiers: { family: anthropic, routes: [{ provider: anthropic }], price: { ${STANDARD}, tiers: { ${PRIORITY}, ${FAST} }, ${LONG} }, max_output_tokens: 1000, context_window: 1000000 }
  claude-plain: { family: anthropic, routes: [{ provider: anthropic }], price: { ${STANDARD} }, max_output_tokens: 1000, context_window: 200000 }
plugins:
  billing: { flush_interval_ms: 10 }
  upstream: { failover: { max_attempts: 1 } }
`;
}

/** Per-token prices in nano-units, by level. */
const NANO = {
  standard: { input: 1000n, cacheHit: 100n, output: 5000n },
  priority: { input: 2000n, cacheHit: 200n, output: 10_000n },
  flex: { input: 500n, cacheHit: 50n, output: 2500n },
  fast: { input: 6000n, cacheHit: 600n, output: 30_000n },
  long: { input: 2000n, cacheHit: 200n, output: 7500n },
} as const;

function expectedCost(level: keyof typeof NANO, input: number, output: number, cacheRead = 0): bigint {
  const rates = NANO[level];
  return BigInt(input) * rates.input + BigInt(cacheRead) * rates.cacheHit + BigInt(output) * rates.output;
}

// ---------------------------------------------------------------------------------------------------
// Replies that report a tier
// ---------------------------------------------------------------------------------------------------

function chatReply(tier: string, input: number, output: number): JsonReply {
  return {
    status: 200,
    json: {
      id: 'chatcmpl-tier',
      object: 'chat.completion',
      created: 1,
      model: 'gpt-tiers',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Served.' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output },
      service_tier: tier,
    },
  };
}

/** A chat stream whose every chunk names the tier, as OpenAI's do, with a usage chunk at the end. */
function chatStreamReply(tier: string, input: number, output: number): SseReply {
  const chunk = (extra: Record<string, unknown>): SseEvent => ({
    data: { id: 'chatcmpl-tier', object: 'chat.completion.chunk', created: 1, model: 'gpt-tiers', service_tier: tier, ...extra },
  });
  return {
    status: 200,
    events: [
      chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Ser' }, finish_reason: null }], usage: null }),
      chunk({ choices: [{ index: 0, delta: { content: 'ved.' }, finish_reason: 'stop' }], usage: null }),
      chunk({ choices: [], usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output } }),
      { data: '[DONE]' },
    ],
  };
}

function responseObject(tier: string, input: number, output: number): Record<string, unknown> {
  return {
    id: 'resp_tier',
    object: 'response',
    created_at: 1,
    status: 'completed',
    model: 'gpt-tiers',
    output: [{ type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Served.', annotations: [] }] }],
    usage: { input_tokens: input, output_tokens: output, total_tokens: input + output, input_tokens_details: { cached_tokens: 0 } },
    service_tier: tier,
  };
}

function responsesStreamReply(tier: string, input: number, output: number): SseReply {
  const created = { ...responseObject(tier, 0, 0), status: 'in_progress', output: [], usage: null };
  return {
    status: 200,
    events: [
      { event: 'response.created', data: { type: 'response.created', sequence_number: 0, response: created } },
      { event: 'response.output_text.delta', data: { type: 'response.output_text.delta', sequence_number: 1, item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Served.' } },
      { event: 'response.completed', data: { type: 'response.completed', sequence_number: 2, response: responseObject(tier, input, output) } },
    ],
  };
}

interface AnthropicUsage {
  readonly input: number;
  readonly output: number;
  readonly cacheRead?: number;
  readonly tier?: string;
  readonly speed?: string;
}

function anthropicUsage(usage: AnthropicUsage, output: number): Record<string, unknown> {
  return {
    input_tokens: usage.input,
    output_tokens: output,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: usage.cacheRead ?? 0,
    service_tier: usage.tier ?? 'standard',
    ...(usage.speed === undefined ? {} : { speed: usage.speed }),
  };
}

function messagesReply(usage: AnthropicUsage): JsonReply {
  return {
    status: 200,
    json: {
      id: 'msg_tier',
      type: 'message',
      role: 'assistant',
      model: 'claude-tiers',
      content: [{ type: 'text', text: 'Served.' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: anthropicUsage(usage, usage.output),
    },
  };
}

/** The tier and the input come in message_start; message_delta's cumulative usage names only the output. */
function messagesStreamReply(usage: AnthropicUsage): SseReply {
  const message = { id: 'msg_tier', type: 'message', role: 'assistant', model: 'claude-tiers', content: [], stop_reason: null, stop_sequence: null };
  return {
    status: 200,
    events: [
      { event: 'message_start', data: { type: 'message_start', message: { ...message, usage: anthropicUsage(usage, 1) } } },
      { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
      { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Served.' } } },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: usage.output } } },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ],
  };
}

// ---------------------------------------------------------------------------------------------------

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

onEachBackend((backend) => `e2e: premium service priced or refused, on ${backend}`, 'premium service', premiumService);

function premiumService(backendOf: () => Backend): void {
  let fake: FakeUpstream;
  let tg: TestGateway;

  async function start(credit = '10'): Promise<void> {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: yamlFor(fake.url, backendOf()), storeFromConfig: true });
    await tg.store.credit({ accountId: tg.accountId, amount: unitsToNano(credit), kind: 'admin', actor: 'test', note: 'start' });
  }

  afterEach(async () => {
    await fake?.close();
    await tg?.stop();
  });

  async function post(pathname: string, body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Response> {
    return fetch(`${tg.url}${pathname}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${tg.key}`, 'anthropic-version': '2023-06-01', ...headers },
      body: JSON.stringify(body),
    });
  }

  async function chargeFor(answer: Response): Promise<ChargeRecord> {
    await answer.text();
    const requestId = answer.headers.get('x-request-id')!;
    const charges = await waitFor(
      () => tg.store.listCharges({ limit: 1000 }),
      (list) => list.some((charge) => charge.requestId === requestId),
    );
    const found = charges.find((charge) => charge.requestId === requestId);
    if (found === undefined) throw new Error(`no charge for ${requestId}`);
    // The row alone recomputes its cost: it records the rates of the level it was priced at.
    expect(costOf(found, priceOfSnapshot(found.prices!)), 'recomputed from its own row').to.equal(found.cost);
    return found;
  }

  const chat = (model: string, extra: Record<string, unknown> = {}) => ({ model, max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }], ...extra });
  const messages = (model: string, extra: Record<string, unknown> = {}) => ({ model, max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }], ...extra });

  describe('OpenAI service tiers', () => {
    beforeEach(() => start());

    for (const stream of [false, true]) {
      const how = stream ? 'streamed' : 'plain';

      it(`charges service_tier "priority" at the priority rates the reply reports, ${how} chat`, async () => {
        fake.enqueue(stream ? chatStreamReply('priority', 100, 20) : chatReply('priority', 100, 20));
        const body = chat('gpt-tiers', { service_tier: 'priority', stream });
        const answer = await post('/v1/chat/completions', body);
        expect(answer.status).to.equal(200);
        const charge = await chargeFor(answer);
        expect(charge).to.deep.include({ serviceTier: 'priority', longContext: false, cost: expectedCost('priority', 100, 20) });
        // Forwarded as the client sent it: nothing stripped, nothing added but the usage option.
        expect((fake.requests[0].json() as Record<string, unknown>).service_tier).to.equal('priority');
        if (!stream) expect(answer.headers.get('x-tollgate-cost')).to.equal('0.0004');
      });

      it(`charges the tier the reply reports, not the one asked for: priority asked, default served, ${how} chat`, async () => {
        fake.enqueue(stream ? chatStreamReply('default', 100, 20) : chatReply('default', 100, 20));
        const charge = await chargeFor(await post('/v1/chat/completions', chat('gpt-tiers', { service_tier: 'priority', stream })));
        expect(charge).to.deep.include({ serviceTier: 'default', cost: expectedCost('standard', 100, 20) });
      });

      it(`charges a flex reply at the flex rates, ${how} Responses`, async () => {
        fake.enqueue(stream ? responsesStreamReply('flex', 300, 40) : { status: 200, json: responseObject('flex', 300, 40) });
        const answer = await post('/v1/responses', { model: 'gpt-tiers', input: 'Hi', service_tier: 'flex', stream });
        expect(answer.status).to.equal(200);
        const charge = await chargeFor(answer);
        expect(charge).to.deep.include({ serviceTier: 'flex', longContext: false, cost: expectedCost('flex', 300, 40) });
      });

      it(`refuses service_tier "priority" with a 400 in the OpenAI shape where it is not priced, ${how}`, async () => {
        for (const [pathname, tier, body] of [
          ['/v1/chat/completions', 'priority', chat('gpt-plain', { service_tier: 'priority', stream })],
          ['/v1/responses', 'flex', { model: 'gpt-plain', input: 'Hi', service_tier: 'flex', stream }],
        ] as const) {
          const answer = await post(pathname, body);
          expect(answer.status, pathname).to.equal(400);
          const { error } = (await answer.json()) as { error: Record<string, unknown> };
          expect(error).to.deep.equal({
            message: `service_tier "${tier}" is not offered for model gpt-plain.`,
            type: 'invalid_request_error',
            param: 'service_tier',
            code: 'service_not_offered',
          });
        }
        expect(fake.requests, 'the provider was never called').to.have.length(0);
      });
    }

    it('takes service_tier "fast" as priority, as OpenAI serves and reports it, and lets "auto" and "default" through on any model', async () => {
      fake.enqueue(chatReply('priority', 10, 10));
      const fast = await chargeFor(await post('/v1/chat/completions', chat('gpt-tiers', { service_tier: 'fast' })));
      expect(fast).to.deep.include({ serviceTier: 'priority', cost: expectedCost('priority', 10, 10) });
      expect((await post('/v1/chat/completions', chat('gpt-plain', { service_tier: 'fast' }))).status).to.equal(400);
      for (const tier of ['auto', 'default']) {
        fake.enqueue(chatReply('default', 10, 10));
        const charge = await chargeFor(await post('/v1/chat/completions', chat('gpt-plain', { service_tier: tier })));
        expect(charge.cost).to.equal(expectedCost('standard', 10, 10));
      }
    });
  });

  describe('Anthropic service tiers, fast mode and long context', () => {
    beforeEach(() => start());

    for (const stream of [false, true]) {
      const how = stream ? 'streamed' : 'plain';
      const reply = (usage: AnthropicUsage) => (stream ? messagesStreamReply(usage) : messagesReply(usage));

      it(`charges usage.service_tier "priority" at the priority rates, ${how}`, async () => {
        fake.enqueue(reply({ input: 100, output: 20, tier: 'priority' }));
        const answer = await post('/v1/messages', messages('claude-tiers', { service_tier: 'priority', stream }));
        expect(answer.status).to.equal(200);
        expect(await chargeFor(answer)).to.deep.include({ serviceTier: 'priority', longContext: false, cost: expectedCost('priority', 100, 20) });
      });

      it(`charges a 1M-context request whose reported input is 250,000 tokens at the long-context rates for the whole request, ${how}`, async () => {
        // 240,000 uncached and 10,000 cache reads: 250,000 input as Anthropic counts it, above 200,000.
        fake.enqueue(reply({ input: 240_000, cacheRead: 10_000, output: 1000 }));
        const answer = await post('/v1/messages', messages('claude-tiers', { stream }), { 'anthropic-beta': 'context-1m-2025-08-07' });
        expect(answer.status).to.equal(200);
        const charge = await chargeFor(answer);
        expect(charge).to.deep.include({ serviceTier: 'standard', longContext: true, cost: expectedCost('long', 240_000, 1000, 10_000) });
        expect(charge.cost).to.equal(489_500_000n);
        expect(fake.requests[0].headers['anthropic-beta']).to.equal('context-1m-2025-08-07');
      });

      it(`keeps the standard rates at exactly 200,000 input tokens, ${how}`, async () => {
        fake.enqueue(reply({ input: 200_000, output: 1000 }));
        const charge = await chargeFor(await post('/v1/messages', messages('claude-tiers', { stream }), { 'anthropic-beta': 'context-1m-2025-08-07' }));
        expect(charge).to.deep.include({ longContext: false, cost: expectedCost('standard', 200_000, 1000) });
      });

      it(`charges fast mode at the fast rates where it is priced, ${how}`, async () => {
        fake.enqueue(reply({ input: 100, output: 20, speed: 'fast' }));
        const answer = await post('/v1/messages', messages('claude-tiers', { speed: 'fast', stream }), { 'anthropic-beta': 'fast-mode-2026-02-01' });
        expect(answer.status).to.equal(200);
        expect(await chargeFor(answer)).to.deep.include({ serviceTier: 'fast', cost: expectedCost('fast', 100, 20) });
      });

      it(`refuses, with a 400 in the Messages shape naming field and model, what the model does not price, ${how}`, async () => {
        const refusals: [Record<string, unknown>, Record<string, string>, string][] = [
          [messages('claude-plain', { service_tier: 'priority', stream }), {}, 'service_tier "priority" is not offered for model claude-plain.'],
          [messages('claude-plain', { speed: 'fast', stream }), {}, 'speed "fast" is not offered for model claude-plain.'],
          [messages('claude-plain', { stream }), { 'anthropic-beta': 'interleaved-thinking-2025-05-14,fast-mode-2026-02-01' }, 'anthropic-beta "fast-mode-2026-02-01" is not offered for model claude-plain.'],
          [messages('claude-plain', { stream }), { 'anthropic-beta': 'context-1m-2025-08-07' }, 'anthropic-beta "context-1m-2025-08-07" is not offered for model claude-plain.'],
          [messages('claude-plain', { stream, anthropic_beta: ['context-1m-2025-08-07'] }), {}, 'anthropic-beta "context-1m-2025-08-07" is not offered for model claude-plain.'],
        ];
        for (const [body, headers, message] of refusals) {
          const answer = await post('/v1/messages', body, headers);
          expect(answer.status, message).to.equal(400);
          const json = (await answer.json()) as { type: string; error: Record<string, unknown> };
          expect(json.type).to.equal('error');
          expect(json.error).to.deep.include({ type: 'invalid_request_error', message });
        }
        expect(fake.requests, 'the provider was never called').to.have.length(0);
      });
    }

    it('lets other betas through unchanged (Claude Code needs them), and a standard_only request at the standard rates', async () => {
      fake.enqueue(messagesReply({ input: 10, output: 10 }));
      const answer = await post('/v1/messages', messages('claude-plain', { service_tier: 'standard_only' }), { 'anthropic-beta': 'interleaved-thinking-2025-05-14' });
      expect(answer.status).to.equal(200);
      expect(await chargeFor(answer)).to.deep.include({ cost: expectedCost('standard', 10, 10) });
      expect(fake.requests[0].headers['anthropic-beta']).to.equal('interleaved-thinking-2025-05-14');
    });

    it('charges a reply that reports a tier the model does not price at the standard rates, and records the tier', async () => {
      fake.enqueue(messagesReply({ input: 10, output: 10, tier: 'priority' }));
      const charge = await chargeFor(await post('/v1/messages', messages('claude-plain')));
      expect(charge).to.deep.include({ serviceTier: 'priority', cost: expectedCost('standard', 10, 10) });
    });
  });

  describe('the hold', () => {
    /** The hold of a gpt-tiers chat request: one input token per byte at the dearest input price, 100 output. */
    function chatHold(body: Record<string, unknown>, dearestInput: bigint, output: bigint): bigint {
      return BigInt(Buffer.byteLength(JSON.stringify(body))) * dearestInput + 100n * output;
    }

    it('covers the dearest tier the request can reach: a balance that covers the standard hold but not the priority one gets 402 before the provider is called', async () => {
      const premium = chat('gpt-tiers', { service_tier: 'priority' });
      // Standard: the dearest input-side price is the 1-hour cache write (2); priority's is its cache
      // write (2.5), which an OpenAI model's 1-hour writes default to.
      const standardHold = chatHold(premium, 2000n, 5000n);
      const premiumHold = chatHold(premium, 2500n, 10_000n);
      expect(premiumHold > standardHold).to.equal(true);
      fake = await startFakeUpstream();
      tg = await startTestGateway({ yaml: yamlFor(fake.url, backendOf()), storeFromConfig: true });
      await tg.store.credit({ accountId: tg.accountId, amount: standardHold, kind: 'admin', actor: 'test', note: 'start' });

      const refused = await post('/v1/chat/completions', premium);
      expect(refused.status).to.equal(402);
      expect(((await refused.json()) as { error: { code: string } }).error.code).to.equal('insufficient_balance');
      expect(fake.requests, 'the provider was never called').to.have.length(0);

      fake.enqueue(chatReply('default', 10, 10));
      const served = await post('/v1/chat/completions', chat('gpt-tiers'));
      expect(served.status, 'the same balance covers the standard hold').to.equal(200);
      expect((await chargeFor(served)).held).to.equal(chatHold(chat('gpt-tiers'), 2000n, 5000n));
    });

    it('holds a Messages request at the priority rates where the model prices them, since Anthropic serves "auto" at priority when it can', async () => {
      await start();
      fake.enqueue(messagesReply({ input: 10, output: 10 }));
      const body = messages('claude-tiers');
      const charge = await chargeFor(await post('/v1/messages', body));
      // Priority's 1-hour cache write defaults to 2 × its input on an Anthropic model: 4 per 1M.
      expect(charge.held).to.equal(BigInt(Buffer.byteLength(JSON.stringify(body))) * 4000n + 100n * 10_000n);
      expect(charge.cost).to.equal(expectedCost('standard', 10, 10));
    });
  });

  describe('provider-account headers', () => {
    beforeEach(() => start());

    it('never forwards anthropic-organization-id, anthropic-workspace-id, openai-organization or openai-project', async () => {
      const account = { 'anthropic-organization-id': 'org-x', 'anthropic-workspace-id': 'wrkspc-x', 'openai-organization': 'org-y', 'openai-project': 'proj-y' };
      fake.enqueue(messagesReply({ input: 10, output: 10 }));
      expect((await post('/v1/messages', messages('claude-plain'), { ...account, 'anthropic-beta': 'files-api-2025-04-14' })).status).to.equal(200);
      fake.enqueue(chatReply('default', 10, 10));
      expect((await post('/v1/chat/completions', chat('gpt-plain'), account)).status).to.equal(200);
      for (const request of fake.requests) {
        for (const name of Object.keys(account)) expect(request.headers[name], `${name} to ${request.path}`).to.equal(undefined);
      }
      expect(fake.requests[0].headers['anthropic-beta'], 'other anthropic- headers still pass').to.equal('files-api-2025-04-14');
    });
  });
}
