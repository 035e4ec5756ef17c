/**
 * GET /metrics after scripted traffic: a success, a 401, a 429, a 402, a failover and a stream, each
 * counted exactly once with the right labels; the bearer token; counters that survive a reload; and
 * x-request-id on the operator's routes.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import { issueApiKey } from '../../src/auth/issue-key';
import { unitsToNano } from '../../src/billing/money';
import { parseConfig } from '../../src/config/load';
import { startGateway, type Gateway } from '../../src/gateway';
import { openStore } from '../../src/store/open';
import type { Store } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { parseSamples, sampleValue, samplesOf, total, type Sample } from '../helpers/prometheus';
import { PROVIDER_KEYS, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { anthropicError, anthropicMessage, anthropicStream } from '../helpers/upstream-replies';

function yaml(aUrl: string, bUrl: string, limitedKeyId: string, metrics = '{}', server = ''): string {
  return `
version: 1
server: { host: 127.0.0.1${server} }
store: { url: "sqlite::memory:" }
providers:
  a: { protocol: anthropic, base_url: ${aUrl}, api_key: ${PROVIDER_KEYS.anthropic} }
  b: { protocol: anthropic, base_url: ${bUrl}, api_key: ${PROVIDER_KEYS.anthropic} }
models:
  claude-ha:
    family: anthropic
    routes: [{ provider: a, priority: 0 }, { provider: b, priority: 1 }]
    price: { input: 1, output: 5 }
    max_output_tokens: 4096
    context_window: 200000
plugins:
  metrics: ${metrics}
  billing: { flush_interval_ms: 10 }
  rate-limit: { keys: { ${limitedKeyId}: { tpm: 1 } } }
  upstream:
    failover: { max_attempts: 2, backoff_base_ms: 1, backoff_max_ms: 5 }
`;
}

interface Setup {
  readonly a: FakeUpstream;
  readonly b: FakeUpstream;
  readonly store: Store;
  readonly gateway: Gateway;
  readonly accountId: string;
  /** A funded key with no limit. */
  readonly key: string;
  /** A funded key allowed 1 token per minute: every request is refused with 429. */
  readonly limitedKey: string;
  /** A key of an account with no funds: 402. */
  readonly brokeKey: string;
}

async function setup(metrics = '{}', server = '', env: NodeJS.ProcessEnv = {}): Promise<Setup> {
  const a = await startFakeUpstream();
  const b = await startFakeUpstream();
  const store = openStore({ url: 'sqlite::memory:' });
  await store.migrate();
  const account = await store.createAccount({ name: 'metrics', role: 'user' });
  const broke = await store.createAccount({ name: 'metrics-broke', role: 'user' });
  await store.credit({ accountId: account.id, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: 'funds' });
  const { key } = await issueApiKey(store, { accountId: account.id, name: null });
  const limited = await issueApiKey(store, { accountId: account.id, name: 'limited' });
  const { key: brokeKey } = await issueApiKey(store, { accountId: broke.id, name: null });
  const config = parseConfig(yaml(a.url, b.url, limited.record.id, metrics, server), 'metrics.yaml', env);
  const gateway = await startGateway({ config, port: 0, store, logger: pino({ level: 'silent' }) });
  return { a, b, store, gateway, accountId: account.id, key, limitedKey: limited.key, brokeKey };
}

async function teardown(s: Setup | undefined): Promise<void> {
  await s?.gateway.stop(500);
  await s?.store.close();
  await s?.a.close();
  await s?.b.close();
}

function ask(url: string, key: string, options: { stream?: boolean } = {}): Promise<Response> {
  return fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'claude-ha', max_tokens: 50, stream: options.stream === true, messages: [{ role: 'user', content: 'Hi' }] }),
  });
}

async function scrape(url: string, headers: Record<string, string> = {}): Promise<Sample[]> {
  const res = await fetch(`${url}/metrics`, { headers });
  expect(res.status).to.equal(200);
  return parseSamples(await res.text());
}

/** Scrapes until `count` requests have been counted: counting happens once each answer is over. */
async function scrapeAfter(url: string, count: number): Promise<Sample[]> {
  let samples: Sample[] = [];
  for (let tries = 0; tries < 200; tries++) {
    samples = await scrape(url);
    if (total(samples, 'tollgate_requests_total') >= count && sampleValue(samples, 'tollgate_inflight_requests', { endpoint: 'messages' }) === 0) return samples;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`fewer than ${count} requests counted: ${total(samples, 'tollgate_requests_total')}`);
}

describe('e2e: GET /metrics', () => {
  describe('after scripted traffic', () => {
    let s: Setup;
    let samples: Sample[];

    before(async () => {
      s = await setup();
      const url = s.gateway.url;
      // 1. a success from A
      s.a.enqueue(anthropicMessage({ inputTokens: 10, outputTokens: 5 }));
      const ok = await ask(url, s.key);
      expect(ok.status).to.equal(200);
      await ok.text();
      // 2. a 401
      const unauthorized = await ask(url, 'sk-not-a-real-key');
      expect(unauthorized.status).to.equal(401);
      // 3. a 429 (the key may use 1 token per minute)
      const limited = await ask(url, s.limitedKey);
      expect(limited.status).to.equal(429);
      // 4. a 402 (no funds)
      const broke = await ask(url, s.brokeKey);
      expect(broke.status).to.equal(402);
      // 5. a failover: A answers 503, B serves
      s.a.enqueue(anthropicError(503, 'api_error', 'unavailable'));
      s.b.enqueue(anthropicMessage({ inputTokens: 20, outputTokens: 7 }));
      const failover = await ask(url, s.key);
      expect(failover.status).to.equal(200);
      await failover.text();
      // 6. a stream from A
      s.a.enqueue(anthropicStream({ inputTokens: 30, outputTokens: 9 }));
      const stream = await ask(url, s.key, { stream: true });
      expect(stream.status).to.equal(200);
      expect(await stream.text()).to.include('event: message_stop');
      samples = await scrapeAfter(url, 6);
    });

    after(async () => teardown(s));

    it('counts requests by endpoint, model, provider, status class and error code', () => {
      const requests = (model: string, provider: string, statusClass: string, errorCode = '') =>
        sampleValue(samples, 'tollgate_requests_total', { endpoint: 'messages', model, provider, status_class: statusClass, error_code: errorCode });
      expect(requests('claude-ha', 'a', '2xx')).to.equal(2);
      expect(requests('claude-ha', 'b', '2xx')).to.equal(1);
      // Refused before its body was read: no model label value.
      expect(requests('', '', '4xx', 'TOLLGATE_ERR_AUTH_INVALID_KEY')).to.equal(1);
      // The 429 and the 402, refused after the model was resolved and before any upstream.
      expect(requests('claude-ha', '', '4xx', 'TOLLGATE_ERR_RATE_LIMIT_TOKENS')).to.equal(1);
      expect(requests('claude-ha', '', '4xx', 'TOLLGATE_ERR_INSUFFICIENT_BALANCE')).to.equal(1);
      expect(samplesOf(samples, 'tollgate_requests_total')).to.have.length(5);
    });

    it('observes the GenAI token usage by type, and the time to first token of the stream', () => {
      const labels = { gen_ai_operation_name: 'chat', gen_ai_provider_name: 'anthropic', gen_ai_request_model: 'claude-ha' };
      expect(sampleValue(samples, 'gen_ai_client_token_usage_count', { ...labels, gen_ai_token_type: 'input' })).to.equal(3);
      expect(sampleValue(samples, 'gen_ai_client_token_usage_sum', { ...labels, gen_ai_token_type: 'input' })).to.equal(10 + 20 + 30);
      expect(sampleValue(samples, 'gen_ai_client_token_usage_sum', { ...labels, gen_ai_token_type: 'output' })).to.equal(5 + 7 + 9);
      expect(sampleValue(samples, 'gen_ai_server_time_to_first_token_count', labels)).to.equal(1);
      expect(sampleValue(samples, 'gen_ai_server_time_per_output_token_count', labels)).to.equal(1);
    });

    it('observes one duration per request, and a time to first byte and an overhead per committed answer', () => {
      const durations = (model: string, statusClass: string) =>
        sampleValue(samples, 'tollgate_request_duration_seconds_count', { endpoint: 'messages', model, status_class: statusClass });
      expect(durations('claude-ha', '2xx')).to.equal(3);
      expect(durations('claude-ha', '4xx')).to.equal(2);
      expect(durations('', '4xx')).to.equal(1);
      expect(sampleValue(samples, 'tollgate_request_duration_seconds_bucket', { endpoint: 'messages', model: 'claude-ha', status_class: '2xx', le: '+Inf' })).to.equal(3);
      expect(sampleValue(samples, 'tollgate_time_to_first_byte_seconds_count', { endpoint: 'messages', model: 'claude-ha', provider: 'a' })).to.equal(2);
      expect(sampleValue(samples, 'tollgate_time_to_first_byte_seconds_count', { endpoint: 'messages', model: 'claude-ha', provider: 'b' })).to.equal(1);
      expect(sampleValue(samples, 'tollgate_gateway_overhead_seconds_count', { endpoint: 'messages', stream: 'false' })).to.equal(2);
      expect(sampleValue(samples, 'tollgate_gateway_overhead_seconds_count', { endpoint: 'messages', stream: 'true' })).to.equal(1);
      const overhead = sampleValue(samples, 'tollgate_gateway_overhead_seconds_sum', { endpoint: 'messages', stream: 'false' })!;
      const duration = sampleValue(samples, 'tollgate_request_duration_seconds_sum', { endpoint: 'messages', model: 'claude-ha', status_class: '2xx' })!;
      expect(overhead).to.be.at.least(0).and.below(duration);
    });

    it('counts upstream attempts by outcome and the failover from A to B', () => {
      expect(sampleValue(samples, 'tollgate_upstream_attempts_total', { provider: 'a', outcome: 'ok' })).to.equal(2);
      expect(sampleValue(samples, 'tollgate_upstream_attempts_total', { provider: 'a', outcome: 'status_503' })).to.equal(1);
      expect(sampleValue(samples, 'tollgate_upstream_attempts_total', { provider: 'b', outcome: 'ok' })).to.equal(1);
      expect(samplesOf(samples, 'tollgate_upstream_attempts_total')).to.have.length(3);
      expect(sampleValue(samples, 'tollgate_failovers_total', { from_provider: 'a', to_provider: 'b' })).to.equal(1);
      expect(samplesOf(samples, 'tollgate_failovers_total')).to.have.length(1);
    });

    it('counts tokens by kind, the cost and the usage source of the three answers', () => {
      const tokens = (kind: string) => sampleValue(samples, 'tollgate_tokens_total', { model: 'claude-ha', kind });
      expect(tokens('input')).to.equal(60);
      expect(tokens('output')).to.equal(21);
      expect(tokens('cache_write')).to.equal(0);
      expect(tokens('cache_read')).to.equal(0);
      // 60 input at 1 and 21 output at 5 per million tokens.
      expect(sampleValue(samples, 'tollgate_cost_units_total', { model: 'claude-ha' })).to.be.closeTo(0.000165, 1e-12);
      expect(sampleValue(samples, 'tollgate_usage_source_total', { source: 'upstream' })).to.equal(3);
      expect(samplesOf(samples, 'tollgate_usage_source_total')).to.have.length(1);
    });

    it('counts the rate-limit and the balance refusals by kind', () => {
      expect(sampleValue(samples, 'tollgate_ratelimit_rejected_total', { kind: 'tpm' })).to.equal(1);
      expect(samplesOf(samples, 'tollgate_ratelimit_rejected_total')).to.have.length(1);
      expect(sampleValue(samples, 'tollgate_balance_rejected_total', { reason: 'insufficient_balance' })).to.equal(1);
    });

    it('reads the gauges live: nothing in flight, breakers closed, the limiter not degraded', () => {
      expect(sampleValue(samples, 'tollgate_inflight_requests', { endpoint: 'messages' })).to.equal(0);
      expect(sampleValue(samples, 'tollgate_breaker_state', { provider: 'a' })).to.equal(0);
      expect(sampleValue(samples, 'tollgate_breaker_state', { provider: 'b' })).to.equal(0);
      expect(sampleValue(samples, 'tollgate_ratelimit_degraded')).to.equal(0);
    });

    it('labels no account unless label_accounts is on, and exposes the process and Node metrics', () => {
      expect(samplesOf(samples, 'tollgate_account_requests_total')).to.have.length(0);
      for (const sample of samples) expect(sample.labels).to.not.have.any.keys('account', 'key');
      expect(sampleValue(samples, 'process_cpu_user_seconds_total')).to.be.a('number');
      expect(samplesOf(samples, 'nodejs_eventloop_lag_seconds')).to.have.length(1);
    });

    it('answers in the text exposition format, with an x-request-id, without counting itself', async () => {
      const res = await fetch(`${s.gateway.url}/metrics`, { headers: { 'x-request-id': 'scrape-1' } });
      expect(res.headers.get('content-type')).to.equal('text/plain; version=0.0.4; charset=utf-8');
      // The gateway's own id, never the client's (the client's is kept beside it in the log line).
      expect(res.headers.get('x-request-id')).to.match(/^req_[0-9a-f]{32}$/);
      expect(total(parseSamples(await res.text()), 'tollgate_requests_total')).to.equal(6);
    });
  });

  describe('breaker state', () => {
    let s: Setup;
    before(async () => (s = await setup()));
    after(async () => teardown(s));

    it('shows 2 for a provider whose breaker has opened', async () => {
      // volume_threshold 10 by default: ten failures of A open its breaker (B serves each request).
      for (let i = 0; i < 10; i++) {
        s.a.enqueue(anthropicError(503, 'api_error', 'down'));
        const res = await ask(s.gateway.url, s.key);
        expect(res.status).to.equal(200);
        await res.text();
      }
      const samples = await scrapeAfter(s.gateway.url, 10);
      expect(sampleValue(samples, 'tollgate_breaker_state', { provider: 'a' })).to.equal(2);
      expect(sampleValue(samples, 'tollgate_breaker_state', { provider: 'b' })).to.equal(0);
      // The next request skips A without an attempt.
      const res = await ask(s.gateway.url, s.key);
      await res.text();
      const after = await scrapeAfter(s.gateway.url, 11);
      expect(sampleValue(after, 'tollgate_upstream_attempts_total', { provider: 'a', outcome: 'breaker_open' })).to.equal(1);
      expect(sampleValue(after, 'tollgate_failovers_total', { from_provider: 'a', to_provider: 'b' })).to.equal(10);
    });
  });

  describe('with label_accounts on', () => {
    let s: Setup;
    before(async () => (s = await setup('{ label_accounts: true }')));
    after(async () => teardown(s));

    it('counts requests, tokens and cost per account id', async () => {
      s.a.enqueue(anthropicMessage({ inputTokens: 4, outputTokens: 2 }));
      await (await ask(s.gateway.url, s.key)).text();
      const samples = await scrapeAfter(s.gateway.url, 1);
      expect(sampleValue(samples, 'tollgate_account_requests_total', { account: s.accountId })).to.equal(1);
      expect(sampleValue(samples, 'tollgate_account_tokens_total', { account: s.accountId, kind: 'input' })).to.equal(4);
      expect(sampleValue(samples, 'tollgate_account_cost_units_total', { account: s.accountId })).to.be.closeTo(0.000014, 1e-12);
    });
  });

  describe('bearer token', () => {
    let s: Setup;
    before(async () => (s = await setup('{ bearer_token: scrape-secret }')));
    after(async () => teardown(s));

    it('answers 401 without the token or with a wrong one', async () => {
      const attempts: Record<string, string>[] = [{}, { authorization: 'Bearer wrong' }, { authorization: 'scrape-secret' }];
      for (const headers of attempts) {
        const res = await fetch(`${s.gateway.url}/metrics`, { headers });
        expect(res.status).to.equal(401);
        expect(res.headers.get('www-authenticate')).to.equal('Bearer realm="tollgate-metrics"');
        const body = (await res.json()) as { error: { code: string } };
        expect(body.error.code).to.equal('invalid_metrics_token');
      }
    });

    it('serves the metrics with the token', async () => {
      const samples = await scrape(s.gateway.url, { authorization: 'Bearer scrape-secret' });
      expect(sampleValue(samples, 'tollgate_ratelimit_degraded')).to.equal(0);
      expect(sampleValue(samples, 'tollgate_breaker_state', { provider: 'a' })).to.equal(0);
    });

    it('leaves /healthz and /readyz open', async () => {
      expect((await fetch(`${s.gateway.url}/healthz`)).status).to.equal(200);
      expect((await fetch(`${s.gateway.url}/readyz`)).status).to.equal(200);
    });
  });

  describe('server.metrics_token from ${METRICS_TOKEN}', () => {
    let s: Setup;
    before(async () => (s = await setup('{}', ', metrics_token: "${METRICS_TOKEN}"', { METRICS_TOKEN: 'from-the-env' })));
    after(async () => teardown(s));

    it('answers 401 without the token, with a wrong one, or one differing only in length; 200 with it', async () => {
      const attempts: Record<string, string>[] = [{}, { authorization: 'Bearer wrong' }, { authorization: 'Bearer from-the-env-' }, { authorization: 'Basic from-the-env' }];
      for (const headers of attempts) {
        const res = await fetch(`${s.gateway.url}/metrics`, { headers });
        expect(res.status, JSON.stringify(headers)).to.equal(401);
        const body = (await res.json()) as { error: { code: string; message: string } };
        expect(body.error.code).to.equal('invalid_metrics_token');
        expect(body.error.message).to.include('server.metrics_token');
        expect(JSON.stringify(body)).to.not.include('from-the-env');
      }
      const samples = await scrape(s.gateway.url, { authorization: 'Bearer from-the-env' });
      expect(sampleValue(samples, 'tollgate_ratelimit_degraded')).to.equal(0);
    });
  });

  describe('with the plugin off', () => {
    let s: Setup;
    before(async () => (s = await setup('{ enabled: false }')));
    after(async () => teardown(s));

    it('answers 404 on GET /metrics and 405 on POST', async () => {
      const res = await fetch(`${s.gateway.url}/metrics`);
      expect(res.status).to.equal(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).to.equal('unknown_url');
      const post = await fetch(`${s.gateway.url}/metrics`, { method: 'POST' });
      expect(post.status).to.equal(405);
      expect(post.headers.get('allow')).to.equal('GET, HEAD');
    });
  });

  describe('across a reload', () => {
    let fake: FakeUpstream;
    let tg: TestGateway;
    let dir: string;
    let file: string;

    before(async () => {
      fake = await startFakeUpstream();
      dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-metrics-'));
      file = path.join(dir, 'gateway.yaml');
      writeFileSync(file, `${reloadYaml(fake.url)}`);
      tg = await startTestGateway({ configFile: file });
    });

    after(async () => {
      await tg?.stop();
      await fake?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('keeps counting in the same registry when a reload rebuilds the chain', async () => {
      await (await ask(tg.url, tg.key)).text();
      expect(sampleValue(await scrapeAfter(tg.url, 1), 'tollgate_requests_total', requestLabels('claude-ha'))).to.equal(1);
      writeFileSync(file, reloadYaml(fake.url).replace('claude-ha:', 'claude-new:\n    family: anthropic\n    routes: [{ provider: a }]\n    free: true\n  claude-ha:'));
      const result = await tg.gateway.reload();
      expect(result.ok).to.equal(true);
      await (await ask(tg.url, tg.key)).text();
      const samples = await scrapeAfter(tg.url, 2);
      expect(sampleValue(samples, 'tollgate_requests_total', requestLabels('claude-ha'))).to.equal(2);
      expect(sampleValue(samples, 'tollgate_upstream_attempts_total', { provider: 'a', outcome: 'ok' })).to.equal(2);
      expect(sampleValue(samples, 'tollgate_breaker_state', { provider: 'a' })).to.equal(0);
    });
  });
});

function requestLabels(model: string): Record<string, string> {
  return { endpoint: 'messages', model, provider: 'a', status_class: '2xx', error_code: '' };
}

function reloadYaml(url: string): string {
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "sqlite::memory:" }
providers:
  a: { protocol: anthropic, base_url: ${url}, api_key: ${PROVIDER_KEYS.anthropic} }
models:
  claude-ha:
    family: anthropic
    routes: [{ provider: a }]
    free: true
`;
}
