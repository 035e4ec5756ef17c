/**
 * What each request cost the operator: a charge records the same usage at the answering route's cost
 * (gateway.yaml `routes[].cost`, else the catalog's list price), to the nano-unit, by the pricing code
 * that computes the customer's price: every token kind, per-call tools, service tiers and long
 * context; a failover records the route that answered; a route of unknown cost records none.
 *
 * Route cost per 1M tokens (nano-units per token in brackets), chosen so that rounding matters:
 *   standard:     input 0.7 (700), cache_write 0.9 (900), cache_write_1h 1.3 (1,300), cache_hit 0.0701 (70.1),
 *                 output 3.1 (3,100), web_search 7 per 1,000 calls (7,000,000 per call)
 *   priority:     input 1.9, cache_write 2.3, cache_write_1h 3.7, cache_hit 0.19, output 9.7
 *   long context: above 200,000 input: input 1.4, cache_write 1.8, cache_write_1h 2.6, cache_hit 0.1402, output 6.2
 *   backup route: input 0.5, output 2.5 (cache prices default to the input price; 1-hour writes to 2 x input)
 */
import { expect } from 'chai';
import { unitsToNano } from '../../src/billing/money';
import { catalogModel } from '../../src/catalog/catalog';
import type { ChargeRecord } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream, type JsonReply } from '../helpers/fake-upstream';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { chatCompletion } from '../helpers/upstream-replies';

const PRICE = `{ input: 1, cache_write: 1.25, cache_write_1h: 2, cache_hit: 0.1, output: 5, tool_calls: { web_search: 10 },
        tiers: { priority: { input: 2, output: 10 } }, long_context: { above_input_tokens: 200000, input: 2, output: 7.5 } }`;
const COST = `{ input: 0.7, cache_write: 0.9, cache_write_1h: 1.3, cache_hit: 0.0701, output: 3.1, tool_calls: { web_search: 7 },
        tiers: { priority: { input: 1.9, cache_write: 2.3, cache_write_1h: 3.7, cache_hit: 0.19, output: 9.7 } },
        long_context: { above_input_tokens: 200000, input: 1.4, cache_write: 1.8, cache_write_1h: 2.6, cache_hit: 0.1402, output: 6.2 } }`;

function yaml(upstream: string): string {
  return `
version: 1
server: { host: 127.0.0.1, shutdown_unready_ms: 0 }
providers:
  anthropic: { protocol: anthropic, base_url: ${upstream}, api_key: ${PROVIDER_KEYS.anthropic} }
  backup: { protocol: anthropic, base_url: ${upstream}, api_key: ${PROVIDER_KEYS.anthropic} }
  openai: { protocol: openai, base_url: ${upstream}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  claude-costed:
    family: anthropic
    routes:
      - { provider: anthropic, upstream_model: claude-house-a, cost: ${COST} }
      - { provider: backup, upstream_model: claude-house-b, priority: 1, cost: { input: 0.5, output: 2.5 } }
    price: ${PRICE}
    max_output_tokens: 1000
    context_window: 400000
  gpt-5-mini: { family: openai, routes: [{ provider: openai }], price: { input: 1, output: 5 }, max_output_tokens: 1000, context_window: 400000 }
  house-model: { family: openai, routes: [{ provider: openai }], price: { input: 1, output: 5 }, max_output_tokens: 1000, context_window: 400000 }
plugins:
  upstream: { failover: { max_attempts: 2, backoff_base_ms: 1, backoff_max_ms: 1 } }
`;
}

interface Usage {
  readonly input: number;
  readonly write5m: number;
  readonly write1h: number;
  readonly read: number;
  readonly output: number;
  readonly searches: number;
  readonly tier?: string;
}

function messagesReply(usage: Usage): JsonReply {
  return {
    status: 200,
    json: {
      id: 'msg_cost',
      type: 'message',
      role: 'assistant',
      model: 'claude-house-a',
      content: [{ type: 'text', text: 'Answered.' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: {
        input_tokens: usage.input,
        cache_creation_input_tokens: usage.write5m + usage.write1h,
        cache_creation: { ephemeral_5m_input_tokens: usage.write5m, ephemeral_1h_input_tokens: usage.write1h },
        cache_read_input_tokens: usage.read,
        output_tokens: usage.output,
        server_tool_use: { web_search_requests: usage.searches },
        service_tier: usage.tier ?? 'standard',
      },
    },
  };
}

/** Nano-units per 1M tokens of each kind, and per 1,000 calls: the rates as integers. */
interface Rates {
  readonly input: bigint;
  readonly write5m: bigint;
  readonly write1h: bigint;
  readonly read: bigint;
  readonly output: bigint;
  readonly search: bigint;
}

/** Σ tokens × rate (calls × rate per 1,000 scaled to per million), divided by 1M once, half up: written out here, not borrowed. */
function expectedCost(usage: Usage, rates: Rates): bigint {
  const sum =
    BigInt(usage.input) * rates.input +
    BigInt(usage.write5m) * rates.write5m +
    BigInt(usage.write1h) * rates.write1h +
    BigInt(usage.read) * rates.read +
    BigInt(usage.output) * rates.output +
    BigInt(usage.searches) * rates.search * 1000n;
  return (sum + 500_000n) / 1_000_000n;
}

const n = (units: string): bigint => unitsToNano(units);
const STANDARD: Rates = { input: n('0.7'), write5m: n('0.9'), write1h: n('1.3'), read: n('0.0701'), output: n('3.1'), search: n('7') };
const PRIORITY: Rates = { input: n('1.9'), write5m: n('2.3'), write1h: n('3.7'), read: n('0.19'), output: n('9.7'), search: n('7') };
const LONG: Rates = { input: n('1.4'), write5m: n('1.8'), write1h: n('2.6'), read: n('0.1402'), output: n('6.2'), search: n('7') };
const BACKUP: Rates = { input: n('0.5'), write5m: n('0.5'), write1h: n('1'), read: n('0.5'), output: n('2.5'), search: 0n };

describe('upstream cost on each charge', () => {
  let fake: FakeUpstream;
  let tg: TestGateway;

  beforeEach(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: yaml(fake.url) });
    await tg.store.credit({ accountId: tg.accountId, amount: unitsToNano('1000'), kind: 'admin', actor: 'test', note: 'start' });
  });
  afterEach(async () => {
    await fake.close();
    await tg.stop();
  });

  async function send(model: string, pathname = '/v1/messages'): Promise<ChargeRecord> {
    const body = pathname === '/v1/messages' ? { model, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] } : { model, messages: [{ role: 'user', content: 'hi' }] };
    const answer = await fetch(`${tg.url}${pathname}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${tg.key}`, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
    });
    expect(answer.status, await answer.clone().text()).to.equal(200);
    await answer.text();
    const id = answer.headers.get('x-request-id')!;
    const deadline = Date.now() + 10_000;
    for (;;) {
      const found = (await tg.store.listCharges({ limit: 100 })).find((charge) => charge.requestId === id);
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`no charge for ${id}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  // Odd counts of every kind, so that 70.1 nano-units a cache-hit token leaves a fraction to round.
  const usage: Usage = { input: 1237, write5m: 311, write1h: 529, read: 4003, output: 877, searches: 3 };

  it('at the standard cost: every token kind and the per-call tool, rounded once', async () => {
    fake.enqueue(messagesReply(usage));
    const charge = await send('claude-costed');
    expect(charge).to.deep.include({ inputTokens: 1237, cacheWriteTokens: 311, cacheWrite1hTokens: 529, cacheReadTokens: 4003, outputTokens: 877 });
    // 1,237 × 700 + 311 × 900 + 529 × 1,300 + 4,003 × 70.1 + 877 × 3,100 + 3 × 7,000,000 = 25,832,810.3 → 25,832,810.
    expect(expectedCost(usage, STANDARD)).to.equal(25_832_810n);
    expect(charge.upstreamCost).to.equal(25_832_810n);
    expect(charge.provider).to.equal('anthropic');
  });

  it('at the tier the reply reports', async () => {
    const priority = { ...usage, tier: 'priority' };
    fake.enqueue(messagesReply(priority));
    const charge = await send('claude-costed');
    expect(charge.serviceTier).to.equal('priority');
    expect(charge.upstreamCost).to.equal(expectedCost(priority, PRIORITY));
  });

  it('at the long-context cost when the input is above the threshold', async () => {
    const long = { ...usage, input: 200_001 };
    fake.enqueue(messagesReply(long));
    const charge = await send('claude-costed');
    expect(charge.longContext).to.equal(true);
    expect(charge.upstreamCost).to.equal(expectedCost(long, LONG));
  });

  it('at the cost of the route that answered after a failover', async () => {
    fake.enqueue({ status: 503, json: { type: 'error', error: { type: 'overloaded_error', message: 'busy' } } }, messagesReply(usage));
    const charge = await send('claude-costed');
    expect(fake.requests.map((request) => (request.json() as { model: string }).model)).to.deep.equal(['claude-house-a', 'claude-house-b']);
    expect(charge.provider).to.equal('backup');
    // The backup's price list has no web search: its calls cost the operator nothing there.
    expect(charge.upstreamCost).to.equal(expectedCost(usage, BACKUP));
    expect(charge.upstreamCost).to.not.equal(expectedCost(usage, STANDARD));
  });

  it('at the catalog list price for a route that states no cost, and none where the catalog has none', async () => {
    const listed = catalogModel({ protocol: 'openai' }, 'gpt-5-mini')!.price!;
    expect(listed).to.deep.include({ input: 0.25, output: 2 });
    fake.enqueue(chatCompletion({ inputTokens: 10, outputTokens: 5 }));
    const catalogued = await send('gpt-5-mini', '/v1/chat/completions');
    // 10 × 250 + 5 × 2,000 = 12,500 nano-units; the customer paid 10 × 1,000 + 5 × 5,000.
    expect(catalogued.upstreamCost).to.equal(12_500n);
    expect(catalogued.cost).to.equal(35_000n);

    fake.enqueue(chatCompletion({ inputTokens: 10, outputTokens: 5 }));
    const unknown = await send('house-model', '/v1/chat/completions');
    expect(unknown.upstreamCost).to.equal(undefined);
    expect(unknown.cost).to.equal(35_000n);
  });
});
