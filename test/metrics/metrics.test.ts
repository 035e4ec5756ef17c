import { expect } from 'chai';
import type { AttemptRecord, ExchangeOutcome, GatewayState } from '../../src/kernel/context';
import { GatewayMetrics } from '../../src/metrics/metrics';
import { summarize, type RequestSummary } from '../../src/metrics/summary';
import { ENDPOINTS, type Usage } from '../../src/protocols/types';
import type { ChargeRecord } from '../../src/store/store';
import { parseSamples, sampleValue, samplesOf } from '../helpers/prometheus';

function summary(overrides: Partial<RequestSummary> = {}): RequestSummary {
  return {
    requestId: 'req_1',
    endpoint: 'chat',
    model: 'gpt-test',
    stream: false,
    accountId: 'acc_1',
    keyPrefix: 'sk-AbCd',
    status: 200,
    errorCode: null,
    outcome: 'delivered',
    provider: 'openai',
    providerProtocol: 'openai',
    attempts: 1,
    attemptLog: [{ provider: 'openai', outcome: 'ok', durationMs: 5 }],
    upstreamRequestId: null,
    tokens: { inputTokens: 3, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 2, imageInputTokens: 0, imageOutputTokens: 0 },
    clientRequestId: null,
    toolCalls: {},
    unpricedTools: [],
    overage: 0n,
    unbilled: 0n,
    usageSource: 'upstream',
    cost: 1_500_000_000n,
    rateLimited: null,
    durationMs: 8,
    ttfbMs: 7,
    overheadMs: 3,
    settleMs: 1,
    ...overrides,
  };
}

async function samplesOfMetrics(metrics: GatewayMetrics) {
  return parseSamples((await metrics.scrape()).body);
}

function outcomeWith(attemptLog: AttemptRecord[], committedAt: number | null, usage: Usage | null): ExchangeOutcome {
  return {
    end: { kind: 'delivered' },
    status: 200,
    provider: attemptLog.at(-1)?.provider ?? null,
    upstreamModel: attemptLog.length === 0 ? null : 'upstream-model',
    attempts: attemptLog.length,
    attemptLog,
    committedAt,
    upstreamRequestId: 'up-1',
    usage,
    outputTokens: () => Promise.resolve(0),
    replyId: null,
  };
}

function stateWith(outcome: ExchangeOutcome, stream: boolean, charge?: ChargeRecord): Partial<GatewayState> {
  return {
    requestId: 'req_1',
    endpoint: ENDPOINTS.chat,
    request: { model: { id: 'gpt-test' }, stream } as unknown as GatewayState['request'],
    exchange: { provider: 'openai', upstreamModel: 'gpt-test', attempts: 1, attemptLog: [], finished: Promise.resolve(outcome) },
    billing: charge === undefined ? undefined : { charged: Promise.resolve(charge) },
  };
}

describe('GatewayMetrics', () => {
  it('keeps each gateway in its own registry', async () => {
    const one = new GatewayMetrics();
    const two = new GatewayMetrics();
    one.record(summary(), { labelAccounts: false });
    const labels = { endpoint: 'chat', model: 'gpt-test', provider: 'openai', status_class: '2xx', error_code: '' };
    expect(sampleValue(await samplesOfMetrics(one), 'tollgate_requests_total', labels)).to.equal(1);
    expect(sampleValue(await samplesOfMetrics(two), 'tollgate_requests_total', labels)).to.equal(undefined);
  });

  it('counts skipped routes as breaker_open attempts but not as failovers', async () => {
    const metrics = new GatewayMetrics();
    const attemptLog = [
      { provider: 'a', outcome: 'breaker_open', durationMs: 0 },
      { provider: 'b', outcome: 'status_500', durationMs: 4 },
      { provider: 'b', outcome: 'reset', durationMs: 1 },
      { provider: 'c', outcome: 'ok', durationMs: 3 },
    ];
    metrics.record(summary({ attemptLog }), { labelAccounts: false });
    const samples = await samplesOfMetrics(metrics);
    expect(sampleValue(samples, 'tollgate_upstream_attempts_total', { provider: 'a', outcome: 'breaker_open' })).to.equal(1);
    expect(sampleValue(samples, 'tollgate_failovers_total', { from_provider: 'b', to_provider: 'b' })).to.equal(1);
    expect(sampleValue(samples, 'tollgate_failovers_total', { from_provider: 'b', to_provider: 'c' })).to.equal(1);
    expect(samplesOf(samples, 'tollgate_failovers_total')).to.have.length(2);
  });

  it('counts cost in units and, only when asked, per account', async () => {
    const metrics = new GatewayMetrics();
    metrics.record(summary(), { labelAccounts: false });
    metrics.record(summary(), { labelAccounts: true });
    const samples = await samplesOfMetrics(metrics);
    expect(sampleValue(samples, 'tollgate_cost_units_total', { model: 'gpt-test' })).to.equal(3);
    expect(sampleValue(samples, 'tollgate_account_requests_total', { account: 'acc_1' })).to.equal(1);
    expect(sampleValue(samples, 'tollgate_account_tokens_total', { account: 'acc_1', kind: 'output' })).to.equal(2);
  });

  it('labels a request with its error code: Tollgate\'s own, upstream_error, client_closed, or none', async () => {
    const metrics = new GatewayMetrics();
    metrics.record(summary({ status: 402, errorCode: 'TOLLGATE_ERR_INSUFFICIENT_BALANCE' }), { labelAccounts: false });
    metrics.record(summary({ status: 400 }), { labelAccounts: false });
    metrics.record(summary({ status: 499 }), { labelAccounts: false });
    metrics.record(summary(), { labelAccounts: false });
    const codes = samplesOf(await samplesOfMetrics(metrics), 'tollgate_requests_total').map((sample) => sample.labels.error_code);
    expect(codes.sort()).to.deep.equal(['', 'TOLLGATE_ERR_INSUFFICIENT_BALANCE', 'client_closed', 'upstream_error']);
  });

  it('observes GenAI token usage with cache tokens counted as input, by the provider\'s vendor name', async () => {
    const metrics = new GatewayMetrics();
    metrics.record(summary({ providerProtocol: 'anthropic', tokens: { inputTokens: 3, cacheWriteTokens: 4, cacheWrite1hTokens: 0, cacheReadTokens: 5, outputTokens: 2, imageInputTokens: 0, imageOutputTokens: 0 } }), { labelAccounts: false });
    const samples = await samplesOfMetrics(metrics);
    const labels = { gen_ai_operation_name: 'chat', gen_ai_provider_name: 'anthropic', gen_ai_request_model: 'gpt-test' };
    expect(sampleValue(samples, 'gen_ai_client_token_usage_sum', { ...labels, gen_ai_token_type: 'input' })).to.equal(12);
    expect(sampleValue(samples, 'gen_ai_client_token_usage_sum', { ...labels, gen_ai_token_type: 'output' })).to.equal(2);
    // A plain reply has no first token of its own: no time-to-first-token sample.
    expect(sampleValue(samples, 'gen_ai_server_time_to_first_token_count', labels)).to.equal(undefined);
  });

  it('observes the time to first token and per output token of a delivered stream', async () => {
    const metrics = new GatewayMetrics();
    const stream = { stream: true, ttfbMs: 200, durationMs: 1200, tokens: { inputTokens: 3, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 11, imageInputTokens: 0, imageOutputTokens: 0 } };
    metrics.record(summary(stream), { labelAccounts: false });
    metrics.record(summary({ ...stream, outcome: 'aborted', status: 499 }), { labelAccounts: false });
    const samples = await samplesOfMetrics(metrics);
    const labels = { gen_ai_operation_name: 'chat', gen_ai_provider_name: 'openai', gen_ai_request_model: 'gpt-test' };
    expect(sampleValue(samples, 'gen_ai_server_time_to_first_token_sum', labels)).to.be.closeTo(0.2, 1e-9);
    expect(sampleValue(samples, 'gen_ai_server_time_to_first_token_count', labels)).to.equal(1);
    expect(sampleValue(samples, 'gen_ai_server_time_per_output_token_sum', labels)).to.be.closeTo(0.1, 1e-9);
  });

  it('says which version runs on which Node.js, and counts reloads by result', async () => {
    const metrics = new GatewayMetrics('9.8.7');
    metrics.recordReload('success');
    metrics.recordReload('invalid');
    metrics.recordReload('invalid');
    const samples = await samplesOfMetrics(metrics);
    expect(sampleValue(samples, 'tollgate_build_info', { version: '9.8.7', node: process.version })).to.equal(1);
    expect(sampleValue(samples, 'tollgate_config_reloads_total', { result: 'success' })).to.equal(1);
    expect(sampleValue(samples, 'tollgate_config_reloads_total', { result: 'invalid' })).to.equal(2);
  });

  it('reads breaker states at scrape time from whatever the live view returns then', async () => {
    const metrics = new GatewayMetrics();
    let states = new Map([['a', 'open' as const]]);
    metrics.watch({ breakerStates: () => states, rateLimitDegraded: () => true });
    expect(sampleValue(await samplesOfMetrics(metrics), 'tollgate_breaker_state', { provider: 'a' })).to.equal(2);
    states = new Map([['b', 'half_open' as const]]) as never;
    const samples = await samplesOfMetrics(metrics);
    expect(samplesOf(samples, 'tollgate_breaker_state')).to.deep.equal([{ name: 'tollgate_breaker_state', labels: { provider: 'b' }, value: 1 }]);
    expect(sampleValue(samples, 'tollgate_ratelimit_degraded')).to.equal(1);
  });
});

describe('summarize', () => {
  const log: AttemptRecord[] = [
    { provider: 'a', outcome: 'status_503', durationMs: 20 },
    { provider: 'b', outcome: 'ok', durationMs: 10 },
  ];

  it("takes a stream's overhead as its time to first byte less every attempt's time", async () => {
    const startedAt = performance.now() - 100;
    const result = await summarize(stateWith(outcomeWith(log, startedAt + 45, null), true), { startedAt, status: 200, errorCode: null });
    expect(result.ttfbMs).to.be.closeTo(45, 1e-6);
    expect(result.overheadMs).to.be.closeTo(15, 1e-6);
    expect(result.durationMs).to.be.at.least(100);
  });

  it("takes a plain reply's overhead as its duration less every attempt's time", async () => {
    const startedAt = performance.now() - 100;
    const result = await summarize(stateWith(outcomeWith(log, startedAt + 45, null), false), { startedAt, status: 200, errorCode: null });
    expect(result.overheadMs).to.be.closeTo(result.durationMs - 30, 1e-6);
  });

  it('has no time to first byte nor overhead when nothing was committed', async () => {
    const startedAt = performance.now();
    const result = await summarize(stateWith(outcomeWith(log, null, null), false), { startedAt, status: 503, errorCode: null });
    expect(result.ttfbMs).to.equal(null);
    expect(result.overheadMs).to.equal(null);
  });

  it('reads tokens from the charge, or from the usage when billing is off', async () => {
    const usage: Usage = { inputTokens: 7, cacheWriteTokens: 1, cacheWrite1hTokens: 0, cacheReadTokens: 2, outputTokens: 3, imageInputTokens: 0, imageOutputTokens: 0, toolCalls: {}, source: 'partial' };
    const charge = { inputTokens: 9, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 4, imageInputTokens: 0, imageOutputTokens: 0, clientRequestId: null, toolCalls: {}, held: 0n, overage: 0n, unbilled: 0n, prices: null, usageSource: 'estimated', cost: 5n } as ChargeRecord;
    const observed = { startedAt: performance.now(), status: 200, errorCode: null };
    const billed = await summarize(stateWith(outcomeWith(log, null, usage), false, charge), observed);
    expect(billed).to.deep.include({ tokens: { inputTokens: 9, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 4, imageInputTokens: 0, imageOutputTokens: 0 }, usageSource: 'estimated', cost: 5n, upstreamRequestId: 'up-1' });
    const unbilled = await summarize(stateWith(outcomeWith(log, null, usage), false), observed);
    expect(unbilled).to.deep.include({ tokens: { inputTokens: 7, cacheWriteTokens: 1, cacheWrite1hTokens: 0, cacheReadTokens: 2, outputTokens: 3, imageInputTokens: 0, imageOutputTokens: 0 }, usageSource: 'partial', cost: null });
  });
});
