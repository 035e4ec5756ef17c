/**
 * Premium service in isolation: which rates a reply is charged at (`chargedLevel`), what a request may
 * ask for and which tiers its hold must cover (`askedService`), and the hold at the dearest of them
 * (`dearestHold`). The end-to-end cases are in test/e2e/billing-tiers.test.ts.
 */
import { expect } from 'chai';
import { askedService } from '../../src/billing/asked-service';
import { dearestHold } from '../../src/billing/hold-amount';
import { costOf } from '../../src/billing/prices';
import { requestReach } from '../../src/protocols/request-reach';
import { chargedLevel, rateTable, type ModelRates } from '../../src/billing/service-levels';
import { parseConfig } from '../../src/config/load';
import { GatewayError } from '../../src/kernel/errors';
import { NO_TOKENS } from '../../src/protocols/types';

const CONFIG = parseConfig(
  `
version: 1
providers:
  anthropic: { protocol: anthropic, base_url: http://127.0.0.1:9, api_key: k }
  openai: { protocol: openai, base_url: http://127.0.0.1:9/v1, api_key: k }
models:
  gpt: { family: openai, routes: [{ provider: openai }], max_output_tokens: 100, context_window: 400000,
    price: { input: 1, output: 5, tiers: { priority: { input: 2, output: 10 }, flex: { input: 0.5, output: 2.5 } } } }
  claude: { family: anthropic, routes: [{ provider: anthropic }], max_output_tokens: 100, context_window: 1000000,
    price: { input: 1, output: 5,
      long_context: { above_input_tokens: 200000, input: 2, output: 7.5 },
      tiers: { fast: { input: 6, output: 30 }, priority: { input: 3, output: 15, long_context: { above_input_tokens: 200000, input: 6, output: 22.5 } } },
      betas: { "files-api-": refuse, "turbo-": fast, "context-1m-2025-01-01": standard } } }
  plain: { family: anthropic, routes: [{ provider: anthropic }], max_output_tokens: 100, context_window: 200000, price: { input: 1, output: 5 } }
`,
  'gateway.yaml',
  {},
);
const RATES = rateTable(CONFIG);
const rates = (model: string): ModelRates => RATES.get(model)!;

function tokens(input: number, output: number, extra: { cacheRead?: number; servedTier?: string } = {}) {
  return { ...NO_TOKENS, inputTokens: input, cacheReadTokens: extra.cacheRead ?? 0, outputTokens: output, ...(extra.servedTier === undefined ? {} : { servedTier: extra.servedTier }) };
}

/** The cost of `counts` at the level they are charged at. */
function charged(model: string, counts: ReturnType<typeof tokens>) {
  const level = chargedLevel(rates(model), counts);
  return { tier: level.serviceTier, longContext: level.longContext, priced: level.tierPriced, cost: costOf(counts, level.card) };
}

function refusal(run: () => unknown): GatewayError {
  try {
    run();
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('billing/service-levels: the rates a reply is charged at', () => {
  it('charges the tier the reply reports, and the standard rates for default, standard or none', () => {
    expect(charged('gpt', tokens(1000, 100, { servedTier: 'priority' }))).to.deep.equal({ tier: 'priority', longContext: false, priced: true, cost: 3_000_000n });
    expect(charged('gpt', tokens(1000, 100, { servedTier: 'flex' })).cost).to.equal(750_000n);
    for (const servedTier of ['default', 'standard', undefined]) {
      expect(charged('gpt', tokens(1000, 100, servedTier === undefined ? {} : { servedTier })).cost, String(servedTier)).to.equal(1_500_000n);
    }
  });

  it('charges a tier the model does not price at the standard rates, and says so', () => {
    expect(charged('plain', tokens(1000, 100, { servedTier: 'priority' }))).to.deep.equal({ tier: 'priority', longContext: false, priced: false, cost: 1_500_000n });
  });

  it('applies the long-context rates to every token once the input, cache reads included, is above the threshold', () => {
    expect(charged('claude', tokens(200_000, 1000))).to.include({ longContext: false, cost: 200_000n * 1000n + 1000n * 5000n });
    // 199,000 uncached and 1,001 cache reads: 200,001 input tokens as the provider counts them.
    const long = charged('claude', tokens(199_000, 1000, { cacheRead: 1001 }));
    expect(long).to.include({ longContext: true });
    // The long-context card's cache hit defaults to its own input price: 2 per 1M.
    expect(long.cost).to.equal(199_000n * 2000n + 1001n * 2000n + 1000n * 7500n);
  });

  it('gives a tier its own long-context rates, and a tier without them its own rates across the whole window', () => {
    expect(charged('claude', tokens(300_000, 10, { servedTier: 'priority' }))).to.include({ longContext: true, cost: 300_000n * 6000n + 10n * 22_500n });
    expect(charged('claude', tokens(300_000, 10, { servedTier: 'fast' }))).to.include({ longContext: false, cost: 300_000n * 6000n + 10n * 30_000n });
  });
});

describe('billing/asked-service: what a request may ask for', () => {
  const none = {};

  it('maps OpenAI service_tier to the tier the reply will report, fast as priority, auto and default as nothing', () => {
    expect(askedService('chat', { service_tier: 'priority' }, none, 'gpt', rates('gpt')).tiers).to.deep.equal([null, 'priority']);
    expect(askedService('responses', { service_tier: 'fast' }, none, 'gpt', rates('gpt')).tiers).to.deep.equal([null, 'priority']);
    expect(askedService('chat', { service_tier: 'flex' }, none, 'gpt', rates('gpt')).tiers).to.deep.equal([null, 'flex']);
    for (const asked of ['auto', 'default', undefined, null]) {
      expect(askedService('chat', { service_tier: asked }, none, 'plain', rates('plain')).tiers, String(asked)).to.deep.equal([null]);
    }
  });

  it('refuses a tier the model does not price, naming the field, the value and the model', () => {
    const error = refusal(() => askedService('chat', { service_tier: 'scale' }, none, 'gpt', rates('gpt')));
    expect(error).to.include({ code: 'TOLLGATE_ERR_SERVICE_NOT_OFFERED', status: 400, param: 'service_tier', message: 'service_tier "scale" is not offered for model gpt.' });
  });

  it("holds Anthropic's default auto at priority only where the model prices it, and standard_only never", () => {
    expect(askedService('messages', {}, none, 'claude', rates('claude')).tiers).to.deep.equal([null, 'priority']);
    expect(askedService('messages', { service_tier: 'auto' }, none, 'claude', rates('claude')).tiers).to.deep.equal([null, 'priority']);
    expect(askedService('messages', { service_tier: 'standard_only' }, none, 'claude', rates('claude')).tiers).to.deep.equal([null]);
    expect(askedService('messages', {}, none, 'plain', rates('plain')).tiers).to.deep.equal([null]);
  });

  it('reads betas from every header line, comma-separated, and from the body, in any case', () => {
    const headers = { 'anthropic-beta': ['interleaved-thinking-2025-05-14', ' Fast-Mode-2026-02-01 ,x'] };
    expect(askedService('messages', { service_tier: 'standard_only' }, headers, 'claude', rates('claude')).tiers).to.deep.equal([null, 'fast']);
    const error = refusal(() => askedService('messages', { anthropic_beta: ['context-1m-2025-08-07'] }, none, 'plain', rates('plain')));
    expect(error).to.include({ param: 'anthropic-beta', message: 'anthropic-beta "context-1m-2025-08-07" is not offered for model plain.' });
  });

  it("lets a model's own beta table add, refuse and override, the longest matching prefix first", () => {
    const claude = rates('claude');
    const only = { service_tier: 'standard_only' };
    expect(askedService('messages', only, { 'anthropic-beta': 'turbo-2027-01-01' }, 'claude', claude).tiers).to.deep.equal([null, 'fast']);
    expect(refusal(() => askedService('messages', only, { 'anthropic-beta': 'files-api-2025-04-14' }, 'claude', claude)).param).to.equal('anthropic-beta');
    // The exact dated name is standard here; any other date still needs the long-context rates, which claude has.
    expect(askedService('messages', only, { 'anthropic-beta': 'context-1m-2025-01-01' }, 'claude', claude).tiers).to.deep.equal([null]);
    expect(askedService('messages', only, { 'anthropic-beta': 'context-1m-2025-08-07' }, 'claude', claude).tiers).to.deep.equal([null]);
    expect(askedService('messages', only, { 'anthropic-beta': 'files-api-2025-04-14' }, 'plain', rates('plain')).tiers, 'refuse is per model').to.deep.equal([null]);
  });

  it('compares values case-insensitively: "FAST" is fast mode, "PRIORITY" priority, "AUTO" auto, the refusal quoting what was sent', () => {
    expect(askedService('messages', { service_tier: 'standard_only', speed: 'FAST' }, none, 'claude', rates('claude')).tiers).to.deep.equal([null, 'fast']);
    expect(refusal(() => askedService('messages', { speed: 'Fast' }, none, 'plain', rates('plain'))).message).to.equal('speed "Fast" is not offered for model plain.');
    expect(askedService('chat', { service_tier: 'PRIORITY' }, none, 'gpt', rates('gpt')).tiers).to.deep.equal([null, 'priority']);
    expect(askedService('responses', { service_tier: 'Fast' }, none, 'gpt', rates('gpt')).tiers).to.deep.equal([null, 'priority']);
    expect(refusal(() => askedService('chat', { service_tier: 'Priority' }, none, 'plain', rates('plain'))).message).to.equal('service_tier "Priority" is not offered for model plain.');
    expect(askedService('chat', { service_tier: 'DEFAULT' }, none, 'plain', rates('plain')).tiers).to.deep.equal([null]);
    expect(askedService('messages', { service_tier: 'AUTO' }, none, 'claude', rates('claude')).tiers).to.deep.equal([null, 'priority']);
    expect(askedService('messages', { service_tier: 'Standard_Only' }, none, 'claude', rates('claude')).tiers).to.deep.equal([null]);
  });

  it('refuses speed "fast" where the fast tier is not priced, and asks nothing on count_tokens', () => {
    expect(refusal(() => askedService('messages', { speed: 'fast' }, none, 'plain', rates('plain'))).message).to.equal('speed "fast" is not offered for model plain.');
    expect(askedService('count_tokens', { speed: 'fast' }, none, 'plain', rates('plain')).tiers).to.deep.equal([null]);
  });
});

describe('billing/hold-amount: the hold at the dearest level', () => {
  const model = CONFIG.models.claude;

  function hold(body: Record<string, unknown>, tiers: readonly (string | null)[]): bigint {
    const raw = Buffer.from(JSON.stringify(body));
    const inputs = { rawBytes: raw.length, reach: requestReach('messages', body, raw), referencedTokens: 0, defaultToolUses: 10 };
    return dearestHold(inputs, model, rates('claude'), tiers).amount;
  }

  it('holds the dearest tier the reply may report', () => {
    const body = { model: 'claude', max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] };
    const input = BigInt(Buffer.byteLength(JSON.stringify(body)));
    // Dearest input-side price per tier: the 1-hour cache write, 2 × input on an Anthropic model.
    expect(hold(body, [null])).to.equal(input * 2000n + 100n * 5000n);
    expect(hold(body, [null, 'priority'])).to.equal(input * 6000n + 100n * 15_000n);
    expect(hold(body, [null, 'priority', 'fast'])).to.equal(input * 12_000n + 100n * 30_000n);
  });

  it("holds at the long-context rates once the input held is above the threshold: here the whole window, for a file the body only references", () => {
    const body = { model: 'claude', max_tokens: 100, messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'file', file_id: 'file_1' } }] }] };
    // 1,000,000 input tokens held (the context window) at the long-context 1-hour write, 2 × 2 per 1M.
    expect(hold(body, [null])).to.equal(1_000_000n * 4000n + 100n * 7500n);
  });
});
