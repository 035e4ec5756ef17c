/**
 * The rate-limit plugin's handler with a fake context (Koa's test-helpers style): when a slot and a
 * reservation are given back, on every exit path, and what a refused request is told.
 */
import { expect } from 'chai';
import pino from 'pino';
import { rateLimitPlugin, type RateLimitService } from '../../../plugins/rate-limit';
import { parseConfig } from '../../../src/config/load';
import type { GatewayConfig } from '../../../src/config/types';
import type { ExchangeOutcome, GatewayContext } from '../../../src/kernel/context';
import { GatewayError } from '../../../src/kernel/errors';
import type { PluginInstance } from '../../../src/kernel/plugin';
import { GatewayMetrics } from '../../../src/metrics/metrics';
import { requestReach } from '../../../src/protocols/request-reach';
import { ENDPOINTS, type EndpointId, type Usage } from '../../../src/protocols/types';
import type { KeyRateLimits, Store } from '../../../src/store/store';

function configWith(rateLimit: string): GatewayConfig {
  const yaml = `
version: 1
store: { url: "sqlite::memory:" }
providers:
  openai: { protocol: openai, base_url: "http://127.0.0.1:9/v1", api_key: k }
models:
  gpt-test: { family: openai, routes: [{ provider: openai }], free: true, max_output_tokens: 1000 }
plugins:
  rate-limit: ${rateLimit}
`;
  return parseConfig(yaml, 'handle-test.yaml', {});
}

interface FakeContext {
  readonly ctx: GatewayContext;
  readonly headers: Record<string, string>;
}

function authOf(options: { keyId?: string; keyRateLimits?: KeyRateLimits; above?: { memberAccountId?: string; accountLimits?: KeyRateLimits; memberLimits?: KeyRateLimits } }) {
  const key = { id: options.keyId ?? 'key_a', rateLimits: options.keyRateLimits ?? null, memberAccountId: options.above?.memberAccountId ?? null };
  const account = { id: 'acc_1' };
  const above = options.above;
  if (above === undefined) return { key, account };
  const identity = {
    key,
    account,
    ...(above.accountLimits === undefined ? {} : { accountLimits: { rateLimits: above.accountLimits } }),
    ...(above.memberLimits === undefined ? {} : { memberLimits: { models: null, rateLimits: above.memberLimits } }),
  };
  return { key, account, identity };
}

let counter = 0;
function fakeContext(
  config: GatewayConfig,
  options: {
    keyId?: string;
    keyRateLimits?: KeyRateLimits;
    endpoint?: EndpointId;
    maxTokens?: number;
    /** The levels above the key, as authentication leaves them on the request. */
    above?: { memberAccountId?: string; accountLimits?: KeyRateLimits; memberLimits?: KeyRateLimits };
  } = {},
): FakeContext {
  counter += 1;
  const endpoint = ENDPOINTS[options.endpoint ?? 'chat'];
  const body = { model: 'gpt-test', max_tokens: options.maxTokens ?? 100, messages: [{ role: 'user', content: 'hi' }] };
  const raw = Buffer.from(JSON.stringify(body));
  const headers: Record<string, string> = {};
  const ctx = {
    state: {
      requestId: `req_handle_${counter}`,
      config,
      endpoint,
      request: { raw, body, model: config.models['gpt-test'], stream: false, modelSpan: [0, 0], reach: requestReach(endpoint.id, body, raw) },
      auth: authOf(options),
    },
    status: 200,
    set(field: string | Record<string, string>, value?: string) {
      if (typeof field === 'string') headers[field] = value!;
      else Object.assign(headers, field);
    },
  } as unknown as GatewayContext;
  return { ctx, headers };
}

/** The reservation of `fakeContext`'s body: input from bytes (÷ 3, rounded up) plus max_tokens. */
function reservationOf(fake: FakeContext): number {
  return Math.ceil(fake.ctx.state.request!.raw.length / 3) + (fake.ctx.state.request!.body.max_tokens as number);
}

function outcome(usage: Usage | null): ExchangeOutcome {
  return { end: { kind: 'delivered' }, status: 200, provider: 'openai', upstreamModel: 'gpt-4o', attempts: 1, attemptLog: [], committedAt: null, upstreamRequestId: null, usage, outputTokens: () => Promise.resolve(0), replyId: null };
}

function usage(total: number): Usage {
  return { inputTokens: total - 10, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: 10, imageInputTokens: 0, imageOutputTokens: 0, toolCalls: {}, source: 'upstream' };
}

/** Opens an exchange on the context whose `finished` the test settles. */
function openExchange(ctx: GatewayContext): (outcome: ExchangeOutcome) => void {
  let settle!: (outcome: ExchangeOutcome) => void;
  const finished = new Promise<ExchangeOutcome>((resolve) => (settle = resolve));
  ctx.state.exchange = { provider: 'openai', upstreamModel: 'gpt-test', attempts: 1, attemptLog: [], finished };
  return settle;
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

async function refusal(work: Promise<unknown>): Promise<GatewayError> {
  try {
    await work;
  } catch (error) {
    return error as GatewayError;
  }
  throw new Error('expected a refusal');
}

describe('rate-limit plugin handle', () => {
  let config: GatewayConfig;
  let plugin: PluginInstance<RateLimitService>;

  async function setUp(rateLimit: string): Promise<void> {
    config = configWith(rateLimit);
    plugin = await rateLimitPlugin.setup(config.plugins['rate-limit'], { config, store: {} as Store, logger: pino({ level: 'silent' }), metrics: new GatewayMetrics() });
  }

  afterEach(async () => plugin?.close?.());

  it('refuses past the limit before calling next, with retry-after and the limit headers', async () => {
    await setUp('{ per_key: { rpm: 1 } }');
    await plugin.handle(fakeContext(config).ctx, async () => undefined);
    const fake = fakeContext(config);
    let called = false;
    const error = await refusal(plugin.handle(fake.ctx, async () => void (called = true)));
    expect(called, 'next').to.equal(false);
    expect(error.code).to.equal('TOLLGATE_ERR_RATE_LIMIT_REQUESTS');
    expect(error.status).to.equal(429);
    expect(Number(error.headers['retry-after'])).to.be.within(1, 60);
    expect(fake.headers).to.include({ 'x-ratelimit-limit-requests': '1', 'x-ratelimit-remaining-requests': '0' });
    expect(fake.ctx.state.rateLimit).to.deep.equal({ backend: 'local', refused: 'requests', reservedTokens: 0 });
  });

  it('frees the slot and returns the tokens when an inner plugin throws before any exchange', async () => {
    await setUp('{ per_key: { concurrency: 1, tpm: 100000 } }');
    const first = fakeContext(config);
    await refusal(plugin.handle(first.ctx, async () => Promise.reject(new Error('402 further in'))));
    const second = fakeContext(config);
    await plugin.handle(second.ctx, async () => undefined);
    expect(second.headers['x-ratelimit-remaining-tokens']).to.equal(String(100000 - reservationOf(second)));
  });

  it('holds the slot of a response that outlives next() until its exchange finishes, then corrects the tokens', async () => {
    await setUp('{ per_key: { concurrency: 1, tpm: 100000 } }');
    const stream = fakeContext(config);
    let finish!: (outcome: ExchangeOutcome) => void;
    await plugin.handle(stream.ctx, async () => void (finish = openExchange(stream.ctx)));

    const error = await refusal(plugin.handle(fakeContext(config).ctx, async () => undefined));
    expect(error.code).to.equal('TOLLGATE_ERR_RATE_LIMIT_CONCURRENCY');
    expect(error.spec.code).to.equal('concurrency_limit_exceeded');
    expect(error.headers['retry-after']).to.equal('1');

    finish(outcome(usage(50)));
    await tick();
    const next = fakeContext(config);
    await plugin.handle(next.ctx, async () => undefined);
    expect(next.headers['x-ratelimit-remaining-tokens']).to.equal(String(100000 - 50 - reservationOf(next)));
  });

  it('frees the slot when an inner plugin throws after opening an exchange, once the exchange ends', async () => {
    await setUp('{ per_key: { concurrency: 1 } }');
    const failing = fakeContext(config);
    let finish!: (outcome: ExchangeOutcome) => void;
    await refusal(
      plugin.handle(failing.ctx, async () => {
        finish = openExchange(failing.ctx);
        throw new Error('upstream broke');
      }),
    );
    expect((await refusal(plugin.handle(fakeContext(config).ctx, async () => undefined))).code).to.equal('TOLLGATE_ERR_RATE_LIMIT_CONCURRENCY');
    finish({ ...outcome(null), end: { kind: 'failed', error: new Error('upstream broke') }, status: 502 });
    await tick();
    await plugin.handle(fakeContext(config).ctx, async () => undefined);
  });

  it('keeps the reservation when the exchange reports no usage', async () => {
    await setUp('{ per_key: { tpm: 100000 } }');
    const first = fakeContext(config);
    await plugin.handle(first.ctx, async () => openExchange(first.ctx)(outcome(null)));
    await tick();
    const second = fakeContext(config);
    await plugin.handle(second.ctx, async () => undefined);
    expect(second.headers['x-ratelimit-remaining-tokens']).to.equal(String(100000 - reservationOf(first) - reservationOf(second)));
  });

  it('applies a key override from plugins.rate-limit.keys and leaves other keys to per_key', async () => {
    await setUp('{ per_key: { rpm: 1 }, keys: { key_vip: { rpm: 3 } } }');
    for (let i = 0; i < 3; i++) await plugin.handle(fakeContext(config, { keyId: 'key_vip' }).ctx, async () => undefined);
    expect((await refusal(plugin.handle(fakeContext(config, { keyId: 'key_vip' }).ctx, async () => undefined))).code).to.equal(
      'TOLLGATE_ERR_RATE_LIMIT_REQUESTS',
    );
    await plugin.handle(fakeContext(config, { keyId: 'key_other' }).ctx, async () => undefined);
  });

  it('reserves no tokens on count_tokens and sends Anthropic headers there', async () => {
    await setUp('{ per_key: { tpm: 1000, rpm: 5 } }');
    const fake = fakeContext(config, { endpoint: 'count_tokens', maxTokens: 5000 });
    await plugin.handle(fake.ctx, async () => undefined);
    expect(fake.headers).to.include({ 'anthropic-ratelimit-tokens-remaining': '1000', 'anthropic-ratelimit-requests-remaining': '4' });
  });

  it('stays out of the way, with no headers, when no limit is configured', async () => {
    await setUp('{}');
    const fake = fakeContext(config);
    for (let i = 0; i < 5; i++) await plugin.handle(fake.ctx, async () => undefined);
    expect(fake.headers).to.deep.equal({});
    expect(fake.ctx.state.rateLimit).to.equal(undefined);
  });

  describe('levels above the key', () => {
    it("counts every key of an account in the operator's one bucket for it, and names that level", async () => {
      await setUp('{}');
      const above = { accountLimits: { rpm: 3 } };
      for (const keyId of ['key_a', 'key_b', 'key_c']) await plugin.handle(fakeContext(config, { keyId, above }).ctx, async () => undefined);
      const fake = fakeContext(config, { keyId: 'key_made_later', above });
      const error = await refusal(plugin.handle(fake.ctx, async () => undefined));
      expect(error.code).to.equal('TOLLGATE_ERR_RATE_LIMIT_REQUESTS');
      expect(error.message).to.match(/^The operator's limit on this account of 3 requests per minute is reached\. Retry in \d+ s\.$/);
      expect(error.refusedBy).to.equal('account');
      expect(Number(error.headers['retry-after'])).to.be.within(1, 60);
      expect(fake.headers).to.include({ 'x-ratelimit-limit-requests': '3', 'x-ratelimit-remaining-requests': '0' });
    });

    it("counts a member's keys in the organisation's one bucket for that member, apart from other members", async () => {
      await setUp('{}');
      const bob = { memberAccountId: 'acc_bob', memberLimits: { concurrency: 1 } };
      const held = fakeContext(config, { keyId: 'key_bob_1', above: bob });
      let finish!: (outcome: ExchangeOutcome) => void;
      await plugin.handle(held.ctx, async () => void (finish = openExchange(held.ctx)));
      const error = await refusal(plugin.handle(fakeContext(config, { keyId: 'key_bob_2', above: bob }).ctx, async () => undefined));
      expect(error.code).to.equal('TOLLGATE_ERR_RATE_LIMIT_CONCURRENCY');
      expect(error.message).to.equal("Too many concurrent requests: the organisation's limit for this member is 1 requests in flight at once. Retry when one has finished.");
      expect(error.refusedBy).to.equal('member');
      // Another member of the same organisation has a bucket of their own.
      await plugin.handle(fakeContext(config, { keyId: 'key_dora', above: { memberAccountId: 'acc_dora', memberLimits: { concurrency: 1 } } }).ctx, async () => undefined);
      finish(outcome(null));
      await tick();
      await plugin.handle(fakeContext(config, { keyId: 'key_bob_2', above: bob }).ctx, async () => undefined);
    });

    it("names the key's own limit as the key's", async () => {
      await setUp('{}');
      await plugin.handle(fakeContext(config, { keyRateLimits: { rpm: 1 }, above: { accountLimits: { rpm: 10 } } }).ctx, async () => undefined);
      const error = await refusal(plugin.handle(fakeContext(config, { keyRateLimits: { rpm: 1 }, above: { accountLimits: { rpm: 10 } } }).ctx, async () => undefined));
      expect(error.message).to.match(/^This API key's limit of 1 requests per minute is reached/);
      expect(error.refusedBy).to.equal('key');
    });
  });
});
