/**
 * Money that cannot be bypassed or undercut (docs/faults.md#f3, f11 to f14): the billing id is the
 * gateway's own; the charge is what the upstream reported, in full, whatever the hold was, with any
 * excess recorded; the hold covers input the body only references; token kinds and per-call tool fees
 * the four classic prices cannot express are priced; unreadable usage is counted, never free; a
 * streamed chat request still gets the provider's own counts without the client seeing a change.
 *
 * Runs on the embedded store and on PostgreSQL + Redis (skipped, saying so, without them).
 *
 * Prices per 1M tokens: input 1, cache_write 1.25, cache_write_1h 2, cache_hit 0.1, output 5; web
 * search 10 per 1,000 calls. In nano-units: 1,000 / 1,250 / 2,000 / 100 / 5,000 per token and
 * 10,000,000 per search. Models: max_output_tokens 1000, context_window 200000.
 */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { unitsToNano } from '../../src/billing/money';
import { costOf, priceOfSnapshot } from '../../src/billing/prices';
import type { ChargeRecord } from '../../src/store/store';
import { openBook } from '../../src/billing/open-book';
import { parseConfig } from '../../src/config/load';
import { startFakeUpstream, type FakeUpstream, type SseEvent } from '../helpers/fake-upstream';
import { onEachBackend, type Backend } from '../helpers/backends';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { chatCompletion, chatStream, responsesObject } from '../helpers/upstream-replies';

const PRICE = '{ input: 1, cache_write: 1.25, cache_write_1h: 2, cache_hit: 0.1, output: 5, tool_calls: { web_search: 10 } }';
/** The dearest input-side price (1-hour cache writes), which holds are sized at, per token in nano-units. */
const HOLD_INPUT_NANO = 2000n;
const OUTPUT_NANO = 5000n;
const MAX_OUTPUT = 1000n;
const CONTEXT_WINDOW = 200_000n;

function yamlFor(upstreamUrl: string, backend: Backend, billing = '{ flush_interval_ms: 10 }', price = PRICE): string {
  return `
version: 1
server: { host: 127.0.0.1 }
${backend.sections}
providers:
  anthropic: { protocol: anthropic, base_url: ${upstreamUrl}, api_key: ${PROVIDER_KEYS.anthropic} }
  openai: { protocol: openai, base_url: ${upstreamUrl}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  claude-priced: { family: anthropic, routes: [{ provider: anthropic }], price: ${price}, max_output_tokens: 1000, context_window: 200000 }
  gpt-priced: { family: openai, routes: [{ provider: openai }], price: ${price}, max_output_tokens: 1000, context_window: 200000 }
plugins:
  billing: ${billing}
  upstream: { failover: { max_attempts: 1 } }
`;
}

/** The hold of a request whose input is only its body: one input token per byte at the dearest price, plus output. */
function bodyHold(body: string, outputTokens: bigint, extraInputTokens = 0n): bigint {
  const input = BigInt(Buffer.byteLength(body)) + extraInputTokens;
  return (input * HOLD_INPUT_NANO * 1_000_000n + outputTokens * OUTPUT_NANO * 1_000_000n + 500_000n) / 1_000_000n;
}

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** A Messages reply with a usage object as given (1-hour writes, server-tool calls, or garbage). */
function messagesReply(usage: Record<string, unknown>, text = 'Searched and answered.') {
  return {
    status: 200,
    json: {
      id: 'msg_exact',
      type: 'message',
      role: 'assistant',
      model: 'claude-priced',
      content: [{ type: 'text', text }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage,
    },
  };
}

onEachBackend((backend) => `e2e: exact billing on ${backend}`, 'exact billing', exactBilling);

function exactBilling(backendOf: () => Backend): void {
  let fake: FakeUpstream;
  let tg: TestGateway;
  const exactYaml = (url: string, billing?: string, price?: string) => yamlFor(url, backendOf(), billing, price);

  async function post(pathname: string, body: unknown, headers: Record<string, string> = {}, key = tg.key): Promise<Response> {
    return fetch(`${tg.url}${pathname}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}`, 'anthropic-version': '2023-06-01', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  }

  async function chargeFor(requestId: string): Promise<ChargeRecord> {
    const charges = await waitFor(
      () => tg.store.listCharges({ limit: 1000 }),
      (list) => list.some((charge) => charge.requestId === requestId),
    );
    const found = charges.find((charge) => charge.requestId === requestId);
    if (found === undefined) throw new Error(`no charge for ${requestId}`);
    return found;
  }

  async function start(yaml: (url: string) => string = exactYaml, credit = '1'): Promise<void> {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: yaml(fake.url), storeFromConfig: true });
    await tg.store.credit({ accountId: tg.accountId, amount: unitsToNano(credit), kind: 'admin', actor: 'test', note: 'start' });
  }

  /** Credits through the balance book, as the CLI and the console do, so a Redis book sees it too. */
  async function topUp(accountId: string, units: string): Promise<void> {
    const book = await openBook(parseConfig(exactYaml(fake.url), 'topup.yaml', {}), tg.store);
    await book.credit({ accountId, amount: unitsToNano(units), kind: 'admin', actor: 'test', note: 'top up' });
    await book.close();
  }

  afterEach(async () => {
    await fake?.close();
    await tg?.stop();
  });

  describe('the billing id', () => {
    beforeEach(() => start(exactYaml, '10'));

    it('charges thirty requests that reuse one x-request-id thirty times, plain and streamed, and across accounts', async () => {
      const other = await tg.store.createAccount({ name: `other-${tg.accountId}`, role: 'user' });
      await tg.store.credit({ accountId: other.id, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: 'start' });
      const otherKey = await tg.createKey({ accountId: other.id });
      const reused = 'client-chosen-id-1';
      const answers: Response[] = [];
      for (let i = 0; i < 30; i++) {
        const stream = i % 2 === 1;
        fake.enqueue(stream ? chatStream({ includeUsage: true, inputTokens: 10, outputTokens: 5 }) : chatCompletion({ inputTokens: 10, outputTokens: 5 }));
        const body = { model: 'gpt-priced', max_tokens: 50, stream, messages: [{ role: 'user', content: `request ${i}` }] };
        const answer = await post('/v1/chat/completions', body, { 'x-request-id': reused }, i < 25 ? tg.key : otherKey.key);
        expect(answer.status).to.equal(200);
        await answer.text();
        answers.push(answer);
      }
      const ids = answers.map((answer) => answer.headers.get('x-request-id')!);
      expect(new Set(ids).size, 'thirty distinct billing ids').to.equal(30);
      expect(ids).to.not.include(reused);
      // The client's id still reaches the provider, for its own correlation.
      expect(fake.requests.every((request) => request.headers['x-request-id'] === reused)).to.equal(true);
      const mine = () => tg.store.listCharges({ accountId: tg.accountId, limit: 1000 });
      const others = () => tg.store.listCharges({ accountId: other.id, limit: 1000 });
      const charges = await waitFor(
        async () => [...(await mine()), ...(await others())],
        (list) => list.length >= 30,
      );
      expect(charges).to.have.length(30);
      expect(charges.filter((charge) => charge.accountId === tg.accountId)).to.have.length(25);
      expect(charges.filter((charge) => charge.accountId === other.id)).to.have.length(5);
      for (const charge of charges) {
        expect(charge.clientRequestId).to.equal(reused);
        expect(charge.cost).to.equal(10n * 1000n + 5n * 5000n);
      }
    });
  });

  describe('input the body only references', () => {
    it('charges a previous_response_id follow-up its reported input in full, held from the remembered size', async () => {
      await start();
      fake.enqueue(responsesObject({ id: 'resp_first', inputTokens: 100_000, outputTokens: 30 }));
      const first = await post('/v1/responses', { model: 'gpt-priced', input: 'x'.repeat(300_000), max_output_tokens: 100 });
      expect(first.status).to.equal(200);
      await first.text();
      await chargeFor(first.headers.get('x-request-id')!);

      fake.enqueue(responsesObject({ inputTokens: 100_030 + 5, outputTokens: 10 }));
      const followUp = JSON.stringify({ model: 'gpt-priced', input: 'And then?', previous_response_id: 'resp_first', max_output_tokens: 100 });
      const answer = await post('/v1/responses', followUp);
      expect(answer.status).to.equal(200);
      const charge = await chargeFor(answer.headers.get('x-request-id')!);
      expect(charge.cost, 'the upstream reported usage at the price table').to.equal(100_035n * 1000n + 10n * 5000n);
      expect(charge.held, 'held: the remembered 100,030 tokens plus the body').to.equal(bodyHold(followUp, 100n, 100_030n));
      expect(charge.overage).to.equal(0n);
    });

    it('holds the whole context window for a response id it never relayed, a file id or a prompt template', async () => {
      await start(exactYaml, '0.05');
      const windowHold = CONTEXT_WINDOW * HOLD_INPUT_NANO + 100n * OUTPUT_NANO;
      for (const body of [
        { model: 'gpt-priced', input: 'Hi', previous_response_id: 'resp_never_seen', max_output_tokens: 100 },
        { model: 'gpt-priced', input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-abc' }] }], max_output_tokens: 100 },
        { model: 'gpt-priced', input: 'Hi', prompt: { id: 'pmpt_123' }, max_output_tokens: 100 },
      ]) {
        const answer = await post('/v1/responses', body);
        expect(answer.status, JSON.stringify(body)).to.equal(402);
        const error = (await answer.json()) as { error: { message: string } };
        expect(error.error.message).to.include(`up to ${CONTEXT_WINDOW} input tokens`);
        expect(windowHold > unitsToNano('0.05')).to.equal(true);
      }
      expect(fake.requests).to.have.length(0);
    });

    it('lets a balance of 0.05 run chained previous_response_id calls only as far as it holds', async () => {
      await start(exactYaml, '0.05');
      let previous: string | null = null;
      let billedInput = 0;
      let served = 0;
      for (let turn = 0; turn < 40; turn++) {
        // The upstream bills the whole chain again as input, as OpenAI does.
        billedInput += 2_000 + 10;
        const id = `resp_chain_${turn}`;
        fake.reset();
        fake.enqueue(responsesObject({ id, inputTokens: billedInput, outputTokens: 10 }));
        const body: Record<string, unknown> = { model: 'gpt-priced', input: 'y'.repeat(6_000), max_output_tokens: 10 };
        if (previous !== null) body.previous_response_id = previous;
        const answer = await post('/v1/responses', body);
        await answer.text();
        if (answer.status === 402) break;
        expect(answer.status).to.equal(200);
        served += 1;
        // Every turn is charged what the upstream reported for it, to the nano-unit: never capped.
        const charge = await chargeFor(answer.headers.get('x-request-id')!);
        expect(charge.cost, `turn ${turn}`).to.equal(BigInt(billedInput) * 1000n + 10n * 5000n);
        previous = id;
        billedInput += 10; // the reply's own output is input to the next turn
      }
      expect(served, 'some turns served, then 402').to.be.within(1, 39);
      const charges = await tg.store.listCharges({ accountId: tg.accountId, limit: 100 });
      const spent = charges.reduce((sum, charge) => sum + charge.cost, 0n);
      expect(spent <= unitsToNano('0.05'), `spent ${spent} of 0.05`).to.equal(true);
      expect(charges.every((charge) => charge.overage === 0n)).to.equal(true);
      expect((await tg.store.balance(tg.accountId)).balance >= 0n).to.equal(true);
    });
  });

  describe('prices beyond the four token kinds', () => {
    beforeEach(() => start());

    const usage = {
      input_tokens: 10,
      cache_creation_input_tokens: 3000,
      cache_creation: { ephemeral_5m_input_tokens: 1000, ephemeral_1h_input_tokens: 2000 },
      cache_read_input_tokens: 400,
      output_tokens: 20,
      server_tool_use: { web_search_requests: 3 },
    };
    // 10 × 1,000 + 1,000 × 1,250 + 2,000 × 2,000 + 400 × 100 + 20 × 5,000 + 3 × 10,000,000 = 35,400,000.
    const expected = 10_000n + 1_250_000n + 4_000_000n + 40_000n + 100_000n + 30_000_000n;
    const request = {
      model: 'claude-priced',
      max_tokens: 100,
      tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 5 }],
      messages: [{ role: 'user', content: 'Search the news.' }],
    };

    it('prices 1-hour cache writes and web-search calls, plain', async () => {
      fake.enqueue(messagesReply(usage));
      const answer = await post('/v1/messages', request);
      expect(answer.status).to.equal(200);
      const charge = await chargeFor(answer.headers.get('x-request-id')!);
      expect(charge).to.deep.include({ cacheWriteTokens: 1000, cacheWrite1hTokens: 2000, cacheReadTokens: 400, toolCalls: { web_search: 3 } });
      expect(charge.cost).to.equal(expected);
      expect(answer.headers.get('x-tollgate-cost')).to.equal('0.0354');
      // Server tools pull their results in as input: the hold is the whole window, plus five searches.
      expect(charge.held).to.equal(CONTEXT_WINDOW * HOLD_INPUT_NANO + 100n * OUTPUT_NANO + 5n * 10_000_000n);
    });

    it('prices 1-hour cache writes and web-search calls, streamed', async () => {
      const { output_tokens: _output, server_tool_use: searches, ...start } = usage;
      const events: SseEvent[] = [
        { event: 'message_start', data: { type: 'message_start', message: { ...messagesReply({}).json, content: [], stop_reason: null, usage: { ...start, output_tokens: 1 } } } },
        { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
        { event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Found it.' } } },
        { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
        { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 20, server_tool_use: searches } } },
        { event: 'message_stop', data: { type: 'message_stop' } },
      ];
      fake.enqueue({ events });
      const answer = await post('/v1/messages', { ...request, stream: true });
      expect(answer.status).to.equal(200);
      await answer.text();
      const charge = await chargeFor(answer.headers.get('x-request-id')!);
      expect(charge).to.deep.include({ cacheWrite1hTokens: 2000, toolCalls: { web_search: 3 }, usageSource: 'upstream' });
      expect(charge.cost).to.equal(expected);
    });

    it('prices OpenAI hosted web searches from the Responses output items', async () => {
      const reply = responsesObject({ inputTokens: 50, outputTokens: 8 });
      const json = reply.json as { output: unknown[] };
      json.output.unshift({ type: 'web_search_call', id: 'ws_1', status: 'completed' }, { type: 'web_search_call', id: 'ws_2', status: 'completed' });
      fake.enqueue(reply);
      const answer = await post('/v1/responses', { model: 'gpt-priced', input: 'news?', tools: [{ type: 'web_search' }], max_output_tokens: 100 });
      expect(answer.status).to.equal(200);
      const charge = await chargeFor(answer.headers.get('x-request-id')!);
      expect(charge.toolCalls).to.deep.equal({ web_search: 2 });
      expect(charge.cost).to.equal(50n * 1000n + 8n * 5000n + 2n * 10_000_000n);
    });
  });

  describe('what the hold covers', () => {
    beforeEach(() => start());

    for (const [name, extra, output] of [
      ['n = 8 holds eight answers', { n: 8, max_tokens: 100 }, 800n],
      ['no max_tokens holds the model maximum', {}, MAX_OUTPUT],
      ['max_tokens 1e20 is held at the model maximum', { max_tokens: 1e20 }, MAX_OUTPUT],
    ] as const) {
      it(name, async () => {
        fake.enqueue(chatCompletion({ inputTokens: 10, outputTokens: 5 }));
        const body = JSON.stringify({ model: 'gpt-priced', messages: [{ role: 'user', content: 'Hi' }], ...extra });
        const answer = await post('/v1/chat/completions', body);
        expect(answer.status).to.equal(200);
        const charge = await chargeFor(answer.headers.get('x-request-id')!);
        expect(charge.held).to.equal(bodyHold(body, output));
      });
    }
  });

  describe('usage that cannot be read', () => {
    beforeEach(() => start());

    for (const [name, usage] of [
      ['strings', { prompt_tokens: '12', completion_tokens: '900' }],
      ['negative counts', { prompt_tokens: 12, completion_tokens: -900 }],
      ['fractions', { prompt_tokens: 12.5, completion_tokens: 900 }],
      ['an absurd count', { prompt_tokens: 3_000_000_000, completion_tokens: 900 }],
    ] as const) {
      it(`is counted by the gateway, never free: ${name}`, async () => {
        const reply = chatCompletion({ text: 'word '.repeat(800) });
        (reply.json as Record<string, unknown>).usage = usage;
        fake.enqueue(reply);
        const answer = await post('/v1/chat/completions', { model: 'gpt-priced', max_tokens: 1000, messages: [{ role: 'user', content: 'Talk.' }] });
        expect(answer.status).to.equal(200);
        const charge = await chargeFor(answer.headers.get('x-request-id')!);
        expect(charge.usageSource).to.equal('estimated');
        expect(charge.outputTokens).to.be.within(700, 900);
        expect(charge.cost > 0n).to.equal(true);
      });
    }
  });

  describe('streamed chat without stream_options.include_usage', () => {
    beforeEach(() => start());

    it('charges the reasoning tokens the provider reported, and the client gets exactly the stream it asked for', async () => {
      // A reasoning model: 2,040 output tokens billed, of which 40 are visible.
      const withUsage = chatStream({ text: 'The answer is forty-two.', includeUsage: true, inputTokens: 20, outputTokens: 2040 });
      fake.enqueue(withUsage);
      const answer = await post('/v1/chat/completions', { model: 'gpt-priced', stream: true, max_tokens: 1000, messages: [{ role: 'user', content: 'Think.' }] });
      expect(answer.status).to.equal(200);
      const received = await answer.text();

      const forwarded = fake.requests[0].json() as { stream_options?: { include_usage?: boolean } };
      expect(forwarded.stream_options).to.deep.equal({ include_usage: true });
      // What the same upstream sends a client that did not ask for usage: no usage chunk, no usage field.
      const expected = withUsage.events
        .filter((event) => !('data' in event) || typeof event.data === 'string' || (event.data as { choices: unknown[] }).choices.length > 0)
        .map((event) => {
          if (!('data' in event)) return '';
          if (typeof event.data === 'string') return `data: ${event.data}\n\n`;
          const { usage: _usage, ...rest } = event.data as Record<string, unknown>;
          return `data: ${JSON.stringify(rest)}\n\n`;
        })
        .join('');
      expect(received).to.equal(expected);

      const charge = await chargeFor(answer.headers.get('x-request-id')!);
      expect(charge).to.deep.include({ usageSource: 'upstream', inputTokens: 20, outputTokens: 2040 });
    });

    it('relays the usage chunk untouched to a client that asked for it', async () => {
      fake.enqueue(chatStream({ includeUsage: true, inputTokens: 20, outputTokens: 7 }));
      const answer = await post('/v1/chat/completions', {
        model: 'gpt-priced',
        stream: true,
        stream_options: { include_usage: true },
        max_tokens: 100,
        messages: [{ role: 'user', content: 'Hi' }],
      });
      const text = await answer.text();
      expect(text).to.include('"choices":[],"usage":{');
      expect(text).to.include('"usage":null');
      expect(fake.requests[0].body.toString()).to.not.include('"stream_options":{"include_usage":true},"model"');
    });
  });

  describe('an upstream that bills more than was held', () => {
    const overrun = () => chatCompletion({ inputTokens: 10, outputTokens: 3000 });
    const body = JSON.stringify({ model: 'gpt-priced', max_tokens: 100, messages: [{ role: 'user', content: 'Be brief.' }] });
    const cost = 10n * 1000n + 3000n * 5000n;

    it('charges in full, records the overage, and refuses the next request until topped up', async () => {
      await start(exactYaml, '0.01');
      fake.enqueue(overrun());
      const answer = await post('/v1/chat/completions', body);
      expect(answer.status).to.equal(200);
      const charge = await chargeFor(answer.headers.get('x-request-id')!);
      const held = bodyHold(body, 100n);
      expect(charge).to.deep.include({ cost, held, overage: cost - held, unbilled: 0n });
      expect(answer.headers.get('x-tollgate-overage')).to.not.equal(null);
      const { balance } = await tg.store.balance(tg.accountId);
      expect(balance).to.equal(unitsToNano('0.01') - cost);
      expect(balance < 0n && -balance <= charge.overage).to.equal(true);

      fake.enqueue(chatCompletion({ inputTokens: 10, outputTokens: 5 }));
      expect((await post('/v1/chat/completions', body)).status).to.equal(402);
      await topUp(tg.accountId, '1');
      fake.enqueue(chatCompletion({ inputTokens: 10, outputTokens: 5 }));
      expect((await post('/v1/chat/completions', body)).status).to.equal(200);
    });

    it('with overage: cap, charges the hold and records the rest as unbilled', async () => {
      await start((url) => exactYaml(url, '{ flush_interval_ms: 10, overage: cap }'), '0.01');
      fake.enqueue(overrun());
      const answer = await post('/v1/chat/completions', body);
      expect(answer.status).to.equal(200);
      const charge = await chargeFor(answer.headers.get('x-request-id')!);
      const held = bodyHold(body, 100n);
      expect(charge).to.deep.include({ cost: held, held, overage: 0n, unbilled: cost - held });
      expect((await tg.store.balance(tg.accountId)).balance).to.equal(unitsToNano('0.01') - held);
    });
  });

  it('records the prices a charge used, so it recomputes from its own row after the prices change', async () => {
    fake = await startFakeUpstream();
    const file = path.join(os.tmpdir(), `tollgate-exact-${process.pid}-${Date.now()}.yaml`);
    writeFileSync(file, exactYaml(fake.url));
    tg = await startTestGateway({ configFile: file, storeFromConfig: true });
    await tg.store.credit({ accountId: tg.accountId, amount: unitsToNano('1'), kind: 'admin', actor: 'test', note: 'start' });
    fake.enqueue(chatCompletion({ inputTokens: 123, outputTokens: 45 }));
    const answer = await post('/v1/chat/completions', { model: 'gpt-priced', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] });
    const charge = await chargeFor(answer.headers.get('x-request-id')!);

    writeFileSync(file, exactYaml(fake.url, undefined, '{ input: 7, output: 70 }'));
    await tg.gateway.reload();
    fake.enqueue(chatCompletion({ inputTokens: 123, outputTokens: 45 }));
    const after = await chargeFor((await post('/v1/chat/completions', { model: 'gpt-priced', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] })).headers.get('x-request-id')!);
    expect(after.cost, 'the new prices apply to new requests').to.equal(123n * 7000n + 45n * 70_000n);

    const [stored] = (await tg.store.listCharges({ accountId: tg.accountId, limit: 10 })).filter((row) => row.requestId === charge.requestId);
    expect(costOf(stored, priceOfSnapshot(stored.prices!))).to.equal(stored.cost);
    expect(stored.cost).to.equal(123n * 1000n + 45n * 5000n);
  });
}
