/**
 * Billing end to end on the embedded store: holds and 402s, exact charges, streamed usage with and
 * without upstream counts, partial billing of abandoned streams, concurrency against a small balance,
 * and no charge lost on shutdown. Prices: 1 unit per 1M input tokens, 5 per 1M output (1,000 and 5,000
 * nano-units per token), so costs are easy to check by hand.
 */
import Anthropic from '@anthropic-ai/sdk';
import { expect } from 'chai';
import OpenAI from 'openai';
import { unitsToNano } from '../../src/billing/money';
import type { ChargeRecord } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { anthropicMessage, anthropicStream, chatCompletion, chatStream, openaiError, responsesStream } from '../helpers/upstream-replies';

function billingYaml(upstreamUrl: string): string {
  const price = '{ input: 1, cache_write: 1.25, cache_hit: 0.1, output: 5 }';
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "sqlite::memory:" }
providers:
  anthropic: { protocol: anthropic, base_url: ${upstreamUrl}, api_key: ${PROVIDER_KEYS.anthropic} }
  openai: { protocol: openai, base_url: ${upstreamUrl}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  claude-priced: { family: anthropic, routes: [{ provider: anthropic }], price: ${price}, max_output_tokens: 1000, context_window: 200000 }
  gpt-priced: { family: openai, routes: [{ provider: openai }], price: ${price}, max_output_tokens: 1000, context_window: 200000 }
  gpt-free: { family: openai, routes: [{ provider: openai }], free: true }
plugins:
  billing: { flush_interval_ms: 10 }
  # One attempt: these tests look at what a single upstream answer is billed.
  upstream: { failover: { max_attempts: 1 } }
`;
}

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 3000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The APIError a request fails with; a request that succeeds fails the test. */
async function failure(request: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  try {
    await request;
  } catch (error) {
    return error as InstanceType<typeof OpenAI.APIError>;
  }
  throw new Error('expected the request to fail');
}

async function anthropicFailure(request: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> {
  try {
    await request;
  } catch (error) {
    return error as InstanceType<typeof Anthropic.APIError>;
  }
  throw new Error('expected the request to fail');
}

describe('e2e: billing', () => {
  let fake: FakeUpstream;
  let tg: TestGateway;
  let openai: OpenAI;
  let anthropic: Anthropic;

  async function chargeFor(requestId: string): Promise<ChargeRecord> {
    const charges = await waitFor(
      () => tg.store.listCharges({ accountId: tg.accountId, limit: 1000 }),
      (list) => list.some((charge) => charge.requestId === requestId),
    );
    const matching = charges.filter((charge) => charge.requestId === requestId);
    expect(matching, `one charge for ${requestId}`).to.have.length(1);
    return matching[0];
  }

  async function settledBalance(): Promise<{ balance: bigint; held: bigint }> {
    return waitFor(() => tg.store.balance(tg.accountId), (value) => value.held === 0n);
  }

  beforeEach(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: billingYaml(fake.url) });
    await tg.store.credit({ accountId: tg.accountId, amount: unitsToNano('1'), kind: 'admin', actor: 'test', note: 'start' });
    openai = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: tg.key, maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: tg.url, apiKey: tg.key, maxRetries: 0 });
  });

  afterEach(async () => {
    await fake?.close();
    await tg?.stop();
  });

  it('charges a plain request exactly, reports the cost, and releases the rest of the hold', async () => {
    fake.enqueue(anthropicMessage({ text: 'Hi.', inputTokens: 100, outputTokens: 50 }));
    const { response, data } = await anthropic.messages
      .create({ model: 'claude-priced', max_tokens: 200, messages: [{ role: 'user', content: 'Hello' }] })
      .withResponse();
    expect(data.usage.output_tokens).to.equal(50);
    // 100 × 1,000 + 50 × 5,000 = 350,000 nano-units.
    expect(response.headers.get('x-tollgate-cost')).to.equal('0.00035');
    const charge = await chargeFor(response.headers.get('x-request-id')!);
    expect(charge).to.deep.include({ cost: 350_000n, inputTokens: 100, outputTokens: 50, usageSource: 'upstream', status: 200, outcome: 'delivered', model: 'claude-priced', provider: 'anthropic' });
    expect(await settledBalance()).to.deep.equal({ balance: unitsToNano('1') - 350_000n, held: 0n });
  });

  it('bills each token kind at its price: cache writes and cache reads apart from input', async () => {
    fake.enqueue({
      status: 200,
      json: {
        id: 'msg_c', type: 'message', role: 'assistant', model: 'claude-priced', content: [{ type: 'text', text: 'ok' }],
        stop_reason: 'end_turn', stop_sequence: null,
        usage: { input_tokens: 10, cache_creation_input_tokens: 1000, cache_read_input_tokens: 10000, output_tokens: 3 },
      },
    });
    // A long prompt, as a cached one is: the hold (sized from the body) must cover what it turns out to cost.
    const prompt = 'cached context '.repeat(3000);
    const { response } = await anthropic.messages.create({ model: 'claude-priced', max_tokens: 10, messages: [{ role: 'user', content: prompt }] }).withResponse();
    // 10×1,000 + 1,000×1,250 + 10,000×100 + 3×5,000 = 10,000 + 1,250,000 + 1,000,000 + 15,000.
    expect((await chargeFor(response.headers.get('x-request-id')!)).cost).to.equal(2_275_000n);
  });

  it('charges what the upstream reported in full when it ignores max_tokens, and records the overage (F3 revised)', async () => {
    fake.enqueue(anthropicMessage({ text: 'far too long', inputTokens: 10, outputTokens: 1_000_000 }));
    const raw = JSON.stringify({ model: 'claude-priced', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] });
    const response = await fetch(`${tg.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': tg.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: raw,
    });
    expect(response.status).to.equal(200);
    // The hold: one input token per body byte at the dearest input-side price (1-hour cache writes,
    // 2 × input = 2,000) plus 10 output tokens at 5,000.
    const hold = BigInt(Buffer.byteLength(raw)) * 2000n + 10n * 5000n;
    const charge = await chargeFor(response.headers.get('x-request-id')!);
    const cost = 10n * 1000n + 1_000_000n * 5000n;
    expect(charge).to.deep.include({ outputTokens: 1_000_000, cost, held: hold, overage: cost - hold, unbilled: 0n });
    // The balance went below zero by the recorded overage, and nothing more is admitted.
    expect((await settledBalance()).balance).to.equal(unitsToNano('1') - cost);
    const refused = await failure(openai.chat.completions.create({ model: 'gpt-priced', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] }));
    expect(refused.status).to.equal(402);
  });

  /** A second account holding less than any request's hold (max_tokens is never held above the model's maximum). */
  async function poorKey(): Promise<string> {
    const poor = await tg.store.createAccount({ name: 'poor', role: 'user' });
    await tg.store.credit({ accountId: poor.id, amount: 1000n, kind: 'admin', actor: 'test', note: 'almost nothing' });
    return (await tg.createKey({ accountId: poor.id })).key;
  }

  it('answers 402 in the chat shape when the balance cannot cover the hold, without calling the upstream', async () => {
    const poor = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: await poorKey(), maxRetries: 0 });
    const error = await failure(poor.chat.completions
      .create({ model: 'gpt-priced', max_tokens: 1_000_000, messages: [{ role: 'user', content: 'Hello' }] }));
    expect(error.status).to.equal(402);
    expect(error.error).to.deep.include({ type: 'insufficient_quota', code: 'insufficient_balance' });
    expect(error.message).to.include('the account has 0.000001 available');
    // max_tokens beyond the model's maximum is held at the maximum, not trusted.
    expect(error.message).to.include('1000 output tokens');
    expect(error.message, 'where to top up').to.include('/console/topup');
    expect(error.headers?.get('x-should-retry')).to.equal('false');
    expect(fake.requests).to.have.length(0);
  });

  it('answers 402 in the Anthropic shape on /v1/messages', async () => {
    const poor = new Anthropic({ baseURL: tg.url, apiKey: await poorKey(), maxRetries: 0 });
    const error = await anthropicFailure(poor.messages
      .create({ model: 'claude-priced', max_tokens: 1_000_000, stream: true, messages: [{ role: 'user', content: 'Hello' }] }));
    expect(error.status).to.equal(402);
    expect((error.error as { type: string; error: { type: string } }).error.type).to.equal('billing_error');
    expect(fake.requests).to.have.length(0);
  });

  it('admits exactly as many of 50 concurrent requests as the balance can hold, and never goes negative', async () => {
    const body = JSON.stringify({ model: 'gpt-priced', max_tokens: 1000, messages: [{ role: 'user', content: 'Count to three.' }] });
    // The hold: one input token per body byte at the dearest input-side price (cache writes, 1,250)
    // plus 1,000 output tokens at 5,000.
    const hold = BigInt(Buffer.byteLength(body)) * 1250n + 1000n * 5000n;
    const account = await tg.store.createAccount({ name: 'tight', role: 'user' });
    await tg.store.credit({ accountId: account.id, amount: hold * 3n + hold / 2n, kind: 'admin', actor: 'test', note: 'three holds' });
    const key = await tg.createKey({ accountId: account.id });
    // The admitted replies are held until the 47 others are back: were one to settle first, the
    // money it gives back could admit a request still on its way (a loaded machine made that happen).
    let answered = 0;
    let allRefused!: () => void;
    const refusalsBack = new Promise<void>((resolve) => (allRefused = resolve));
    for (let i = 0; i < 3; i++) fake.enqueue({ until: refusalsBack, then: chatCompletion({ text: 'one two three', inputTokens: 20, outputTokens: 10 }) });

    const statuses = await Promise.all(
      Array.from({ length: 50 }, () =>
        fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' }, body }).then(async (res) => {
          await res.arrayBuffer();
          // Counted whatever the status: if more than three were admitted, the gate still opens and
          // the assertions below say so, instead of a timeout.
          if (++answered === 47) allRefused();
          return res.status;
        }),
      ),
    );
    expect(statuses.filter((status) => status === 200)).to.have.length(3);
    expect(statuses.filter((status) => status === 402)).to.have.length(47);
    expect(fake.requests).to.have.length(3);
    await waitFor(() => tg.store.listCharges({ accountId: account.id }), (charges) => charges.length === 3);
    const after = await tg.store.balance(account.id);
    // Each admitted request really cost 20 × 1,000 + 10 × 5,000.
    expect(after).to.deep.equal({ balance: hold * 3n + hold / 2n - 3n * 70_000n, held: 0n });
    for (const totals of await tg.store.ledgerTotals()) {
      expect(totals.credits - totals.charges, totals.accountName).to.equal(totals.balance);
      expect(totals.held).to.equal(totals.openHolds);
    }
  });

  it('bills a streamed chat request from the usage chunk when the client asked for one', async () => {
    fake.enqueue(chatStream({ text: 'Streaming words here.', includeUsage: true, inputTokens: 40, outputTokens: 6 }));
    const { response, data: stream } = await openai.chat.completions
      .create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'Go' }], stream: true, stream_options: { include_usage: true } })
      .withResponse();
    for await (const chunk of stream) void chunk;
    const charge = await chargeFor(response.headers.get('x-request-id')!);
    expect(charge).to.deep.include({ inputTokens: 40, outputTokens: 6, usageSource: 'upstream', cost: 40n * 1000n + 6n * 5000n });
  });

  it('counts a streamed chat reply that carried no usage with the tokenizer, never billing zero', async () => {
    fake.enqueue(chatStream({ text: 'These seven words are counted by Tollgate.' }));
    const { response, data: stream } = await openai.chat.completions
      .create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'Say the sentence.' }], stream: true })
      .withResponse();
    for await (const chunk of stream) void chunk;
    const charge = await chargeFor(response.headers.get('x-request-id')!);
    expect(charge.usageSource).to.equal('estimated');
    expect(charge.outputTokens).to.be.within(7, 12);
    expect(charge.inputTokens).to.be.within(3, 10);
    expect(charge.cost).to.equal(BigInt(charge.inputTokens) * 1000n + BigInt(charge.outputTokens) * 5000n);
  });

  it('bills streamed Messages and Responses replies, native and translated, from upstream usage', async () => {
    fake.enqueue(anthropicStream({ text: 'Native messages stream.', inputTokens: 30, outputTokens: 5 }));
    const native = anthropic.messages.stream({ model: 'claude-priced', max_tokens: 50, messages: [{ role: 'user', content: 'x' }] });
    await native.finalMessage();
    const nativeId = (await native.withResponse()).response.headers.get('x-request-id')!;
    expect(await chargeFor(nativeId)).to.deep.include({ inputTokens: 30, outputTokens: 5, usageSource: 'upstream', endpoint: 'messages' });

    fake.enqueue(responsesStream({ text: 'Native responses stream.', inputTokens: 33, outputTokens: 4 }));
    const { response: responsesHead, data: responses } = await openai.responses.create({ model: 'gpt-priced', input: 'x', stream: true }).withResponse();
    for await (const event of responses) void event;
    expect(await chargeFor(responsesHead.headers.get('x-request-id')!)).to.deep.include({ inputTokens: 33, outputTokens: 4, usageSource: 'upstream' });

    fake.enqueue(anthropicStream({ text: 'Translated to chat.', inputTokens: 21, outputTokens: 4 }));
    const { response: chatHead, data: chat } = await openai.chat.completions
      .create({ model: 'claude-priced', messages: [{ role: 'user', content: 'x' }], stream: true })
      .withResponse();
    for await (const chunk of chat) void chunk;
    expect(await chargeFor(chatHead.headers.get('x-request-id')!)).to.deep.include({ inputTokens: 21, outputTokens: 4, usageSource: 'upstream', endpoint: 'chat' });
  });

  it('bills a client that leaves mid-stream for what the upstream produced, once', async () => {
    const words = Array.from({ length: 40 }, (_, i) => `word${i} `);
    const events = [
      { event: 'message_start', data: { type: 'message_start', message: { id: 'msg_p', type: 'message', role: 'assistant', model: 'claude-priced', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 100, output_tokens: 1 } } } },
      { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
      ...words.slice(0, 10).map((text) => ({ event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } } })),
      { pauseMs: 5000 },
    ];
    fake.enqueue({ status: 200, events });
    const controller = new AbortController();
    const res = await fetch(`${tg.url}/v1/messages`, {
      method: 'POST',
      signal: controller.signal,
      headers: { 'x-api-key': tg.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-priced', max_tokens: 500, stream: true, messages: [{ role: 'user', content: 'Talk.' }] }),
    });
    const reader = res.body!.getReader();
    let received = '';
    while (!received.includes('word9')) received += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    await fake.waitForClose(0);

    const charge = await chargeFor(res.headers.get('x-request-id')!);
    expect(charge).to.deep.include({ usageSource: 'partial', outcome: 'aborted', inputTokens: 100 });
    // Ten words were relayed: "word0 " … "word9 " tokenise to about two tokens each.
    expect(charge.outputTokens).to.be.within(10, 30);
    expect(charge.cost).to.equal(100n * 1000n + BigInt(charge.outputTokens) * 5000n);
    expect((await settledBalance()).held).to.equal(0n);
  });

  it('charges nothing for an upstream error, and records it', async () => {
    fake.enqueue(openaiError(500, 'boom'));
    const res = await fetch(`${tg.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tg.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-priced', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(res.status).to.equal(500);
    const charge = await chargeFor(res.headers.get('x-request-id')!);
    expect(charge).to.deep.include({ cost: 0n, usageSource: 'none', status: 500 });
    expect(await settledBalance()).to.deep.equal({ balance: unitsToNano('1'), held: 0n });
  });

  it('records free models at zero cost without holding anything', async () => {
    await tg.store.credit({ accountId: tg.accountId, amount: 1n, kind: 'admin', actor: 'test', note: 'x' });
    fake.enqueue(chatCompletion({ text: 'free', inputTokens: 5, outputTokens: 1 }));
    const { response } = await openai.chat.completions.create({ model: 'gpt-free', messages: [{ role: 'user', content: 'x' }] }).withResponse();
    expect(response.headers.get('x-tollgate-cost')).to.equal('0');
    expect(await chargeFor(response.headers.get('x-request-id')!)).to.deep.include({ cost: 0n, inputTokens: 5, usageSource: 'upstream' });
  });

  it('enforces a key model allow-list (403) and spend limit (402)', async () => {
    await tg.store.setKeyLimits(tg.keyId, { spendLimit: null, models: ['gpt-free'] });
    const denied = await failure(openai.chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'x' }] }));
    expect(denied.status).to.equal(403);
    expect(denied.code).to.equal('model_not_allowed');

    const limited = await tg.createKey();
    await tg.store.setKeyLimits(limited.id, { spendLimit: 1000n, models: null });
    const client = new OpenAI({ baseURL: `${tg.url}/v1`, apiKey: limited.key, maxRetries: 0 });
    const refused = await failure(client.chat.completions.create({ model: 'gpt-priced', messages: [{ role: 'user', content: 'x' }] }));
    expect(refused.status).to.equal(402);
    expect(refused.code).to.equal('key_spend_limit_reached');
    expect(fake.requests).to.have.length(0);
  });

  it('loses no charge when the gateway stops while streams are under way', async () => {
    const slow = (n: number) => ({
      status: 200,
      events: [
        { event: 'message_start', data: { type: 'message_start', message: { id: `msg_${n}`, type: 'message', role: 'assistant', model: 'claude-priced', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1 } } } },
        { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
        { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'partial answer' } } },
        { pauseMs: 10_000 },
      ],
    });
    for (let i = 0; i < 5; i++) fake.enqueue(slow(i));
    const ids = await Promise.all(
      Array.from({ length: 5 }, async () => {
        const res = await fetch(`${tg.url}/v1/messages`, {
          method: 'POST',
          headers: { 'x-api-key': tg.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'claude-priced', max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'x' }] }),
        });
        const reader = res.body!.getReader();
        let seen = '';
        while (!seen.includes('partial answer')) seen += new TextDecoder().decode((await reader.read()).value);
        void reader.read().catch(() => undefined);
        return res.headers.get('x-request-id')!;
      }),
    );
    const store = tg.store;
    await tg.gateway.stop(100);
    const charges = await store.listCharges({ accountId: tg.accountId, limit: 100 });
    expect(charges.map((charge) => charge.requestId).sort()).to.deep.equal([...ids].sort());
    for (const charge of charges) expect(charge).to.deep.include({ usageSource: 'partial', inputTokens: 10 });
    expect((await store.balance(tg.accountId)).held).to.equal(0n);
  });
});
