import { expect } from 'chai';
import { CHARGE_COLUMNS, chargeParams, chargeValues, type SqliteColumns } from '../../src/store/rows';
import type { ChargeRecord } from '../../src/store/store';

const PRICES = { tokens: { inputTokens: '3000', cacheWriteTokens: '3750', cacheWrite1hTokens: '6000', cacheReadTokens: '300', outputTokens: '15000', imageInputTokens: '10000', imageOutputTokens: '40000' }, tool_calls: { web_search: '10000000' } };

function charge(overrides: Partial<ChargeRecord> = {}): ChargeRecord {
  return {
    requestId: 'req_1',
    clientRequestId: 'client-1',
    accountId: 'acc_1',
    keyId: 'key_1',
    model: 'gpt-test',
    provider: 'openai',
    endpoint: 'chat',
    inputTokens: 1,
    cacheWriteTokens: 2,
    cacheWrite1hTokens: 3,
    cacheReadTokens: 4,
    outputTokens: 5,
    imageInputTokens: 14,
    imageOutputTokens: 15,
    images: 16,
    upstreamCost: 17n, memberAccountId: 'acc_2',
    toolCalls: { web_search: 6 },
    cost: 7n,
    held: 8n,
    overage: 9n,
    unbilled: 10n,
    prices: PRICES,
    serviceTier: 'flex',
    longContext: true,
    usageSource: 'upstream',
    status: 200,
    outcome: 'delivered',
    latencyMs: 11.4,
    createdAt: new Date(12),
    sessionId: 'session-1',
    requestedModel: 'alias',
    servedModel: 'gpt-test-2025',
    attempts: [{ provider: 'openai', outcome: 'ok', ms: 13 }],
    ttfbMs: 14.6,
    userAgent: 'agent/1',
    origin: 'playground',
    ...overrides,
  };
}

describe('charge rows', () => {
  const params = (record: ChargeRecord) => chargeParams<SqliteColumns>(record, (at) => at.getTime(), Number);

  it('lists the insert parameters in CHARGE_COLUMNS order, which the positional insert binds by', () => {
    const row = params(charge());
    expect(Object.keys(row)).to.deep.equal([...CHARGE_COLUMNS]);
    expect(chargeValues(row)).to.deep.equal(CHARGE_COLUMNS.map((column) => row[column]));
  });

  it('writes each field of the charge to its column', () => {
    expect(params(charge())).to.deep.equal({
      request_id: 'req_1', client_request_id: 'client-1', account_id: 'acc_1', key_id: 'key_1', model: 'gpt-test', provider: 'openai', endpoint: 'chat',
      input_tokens: 1, cache_write_tokens: 2, cache_write_1h_tokens: 3, cache_read_tokens: 4, output_tokens: 5, image_input_tokens: 14, image_output_tokens: 15,
      tool_calls: '{"web_search":6}', images: 16, cost: 7n, held: 8n, overage: 9n, unbilled: 10n, prices: JSON.stringify(PRICES), service_tier: 'flex', long_context: 1,
      usage_source: 'upstream', status: 200, outcome: 'delivered', latency_ms: 11, created_at: 12, session_id: 'session-1', requested_model: 'alias',
      served_model: 'gpt-test-2025', attempts: '[{"provider":"openai","outcome":"ok","ms":13}]', ttfb_ms: 15, user_agent: 'agent/1', origin: 'playground', upstream_cost: 17n, member_account_id: 'acc_2',
    });
  });

  it('writes each price snapshot as its own JSON, the same text for every charge of one snapshot', () => {
    const other = { ...PRICES, tokens: { ...PRICES.tokens, outputTokens: '16000' } };
    expect(params(charge()).prices).to.equal(JSON.stringify(PRICES));
    expect(params(charge({ requestId: 'req_2' })).prices).to.equal(JSON.stringify(PRICES));
    expect(params(charge({ prices: other })).prices).to.equal(JSON.stringify(other));
    expect(params(charge({ prices: null })).prices).to.equal(null);
  });
});
