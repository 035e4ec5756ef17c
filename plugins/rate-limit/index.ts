/**
 * Rate limits per key and per account: requests and tokens per minute, requests in flight. A request
 * past a limit gets a 429 before billing holds anything and before any upstream call; every response
 * of a limited key carries its protocol's rate-limit headers. Counting lives in `src/rate-limit`; this
 * file decides what is limited, when a request's slot and tokens are given back, and what the client
 * is told.
 */
import { maxOutputTokens } from '../../src/billing/hold-amount';
import { imageTokensPerImage } from '../../src/billing/image-billing';
import type { RateLimitPluginConfig, RateLimits } from '../../src/config/types';
import type { GatewayContext, Next } from '../../src/kernel/context';
import type { AuthState } from '../auth';
import { need } from '../../src/kernel/need';
import { GatewayError } from '../../src/kernel/errors';
import type { PluginInstance } from '../../src/kernel/plugin';
import type { PluginDefinition } from '../kit';
import { TOKEN_KINDS, type Usage } from '../../src/protocols/types';
import { ClusterLimiter } from '../../src/rate-limit/cluster';
import { FallbackLimiter, openLimiter } from '../../src/rate-limit/fallback';
import { rateLimitHeaders, subjectLabel, viewOf } from '../../src/rate-limit/headers';
import type { Admission, Decision, Limiter, Subject } from '../../src/rate-limit/limiter';

/** The rate-limit plugin's slot, for a limited key: what it decided, for logs and metrics. */
interface RateLimitState {
  /** Where the counters live; `local` includes a Redis outage's fallback. */
  readonly backend: 'local' | 'redis';
  /** The limit that refused the request; null when it was admitted. */
  readonly refused: 'requests' | 'tokens' | 'concurrency' | null;
  /** Tokens reserved against the tokens-per-minute limits (0 when refused). */
  readonly reservedTokens: number;
}

declare module '../../src/kernel/context' {
  interface GatewayState {
    rateLimit?: RateLimitState;
  }
}

/** What the rate-limit plugin offers others: its live state, for metrics and readiness. */
export interface RateLimitService {
  /** True while Redis (or a worker's primary) does not answer and each process enforces local limits. */
  readonly degraded: boolean;
}

function limits(base: RateLimits, overrides: Readonly<Record<string, Partial<RateLimits>>>, id: string): RateLimits {
  return Object.hasOwn(overrides, id) ? { ...base, ...overrides[id] } : base;
}

/** The lower of two limits, 0 meaning none. */
function lower(operator: number, owner: number | undefined): number {
  if (owner === undefined || owner <= 0) return operator;
  return operator === 0 ? owner : Math.min(operator, owner);
}

/**
 * A key's limits: the operator's (gateway.yaml), tightened by what the key's owner set in the console.
 * An owner can only lower a limit, never lift the operator's.
 */
function keyLimits(config: RateLimitPluginConfig, key: AuthState['key']): RateLimits {
  const operator = limits(config.per_key, config.keys, key.id);
  const owner = key.rateLimits;
  if (owner === null) return operator;
  return { rpm: lower(operator.rpm, owner.rpm), tpm: lower(operator.tpm, owner.tpm), concurrency: lower(operator.concurrency, owner.concurrency) };
}

function limitsSomething({ rpm, tpm, concurrency }: RateLimits): boolean {
  return rpm > 0 || tpm > 0 || concurrency > 0;
}

/** Whether any key or account can be limited at all; if not, the plugin stays out of the way. */
function limitsAnyone(config: RateLimitPluginConfig): boolean {
  const overrides = [...Object.values(config.keys), ...Object.values(config.accounts)];
  return limitsSomething(config.per_key) || limitsSomething(config.per_account) || overrides.some((o) => Object.values(o).some((v) => v > 0));
}

/** The request's limited subjects, key first. */
function subjectsOf(config: RateLimitPluginConfig, { key, account }: AuthState): Subject[] {
  const subjects: Subject[] = [
    { id: `key:${key.id}`, limits: keyLimits(config, key) },
    { id: `account:${account.id}`, limits: limits(config.per_account, config.accounts, account.id) },
  ];
  return subjects.filter((subject) => limitsSomething(subject.limits));
}

/** Prose and code run well under one token per three bytes: a reservation, not a bound (billing holds one per byte). */
const BYTES_PER_TOKEN = 3;

/**
 * The tokens a request reserves: its body's input estimate (one token per three bytes) and its output
 * limit per answer; for an image request, the image tokens each of its `n` images can take.
 */
function reservation(ctx: GatewayContext): number {
  const { endpoint } = ctx.state;
  if (!endpoint.generates) return 0;
  const { raw, reach, model } = need(ctx, 'request');
  const perAnswer = reach.image === undefined ? maxOutputTokens(reach, model) : imageTokensPerImage(model.image_output_tokens, reach.image);
  return Math.ceil(raw.length / BYTES_PER_TOKEN) + perAnswer * reach.choices;
}

function usedTokens(usage: Usage): number {
  return TOKEN_KINDS.reduce((sum, kind) => sum + usage[kind], 0);
}

function refusal(decision: Extract<Decision, { ok: false }>, subjects: readonly Subject[], tokens: number): GatewayError {
  const subject = subjects[decision.subject];
  const who = `this ${subjectLabel(subject)}`;
  const { limits: applied, resetMs } = decision.usage[decision.subject];
  const seconds = Math.max(1, Math.ceil(resetMs / 1000));
  const headers = { 'retry-after': String(decision.refused === 'concurrency' ? 1 : seconds) };
  const refusedBy = subjectLabel(subject) === 'API key' ? 'key' : 'account';
  switch (decision.refused) {
    case 'requests':
      return new GatewayError('TOLLGATE_ERR_RATE_LIMIT_REQUESTS', `Rate limit reached: ${who} may make ${applied.rpm} requests per minute. Retry in ${seconds} s.`, {
        headers,
        refusedBy,
      });
    case 'tokens': {
      const message =
        tokens > applied.tpm
          ? `This request reserves ${tokens} tokens (input estimate plus its output limit), more than the ${applied.tpm} tokens per minute ${who} may use; lower max_tokens.`
          : `Rate limit reached: ${who} may use ${applied.tpm} tokens per minute and this request reserves ${tokens} (input estimate plus its output limit). Retry in ${seconds} s, or lower max_tokens.`;
      return new GatewayError('TOLLGATE_ERR_RATE_LIMIT_TOKENS', message, { headers, refusedBy });
    }
    case 'concurrency':
      return new GatewayError(
        'TOLLGATE_ERR_RATE_LIMIT_CONCURRENCY',
        `Too many concurrent requests: ${who} may have ${applied.concurrency} requests in flight at once. Retry when one has finished.`,
        { headers, refusedBy },
      );
  }
}

export const rateLimitPlugin: PluginDefinition<'rate-limit', RateLimitService> = {
  name: 'rate-limit',
  priority: 1500,
  stage: 'limits',
  async setup(config, kit): Promise<PluginInstance<RateLimitService>> {
    // Opened at setup when gateway.yaml limits anyone; otherwise on the first request of a key whose
    // owner set limits in the console, so a gateway that limits nobody never connects for it.
    let limiter: Limiter | null = null;
    let opening: Promise<Limiter> | null = null;
    const openedLimiter = (): Promise<Limiter> =>
      (opening ??= openLimiter(
        kit.config.redis,
        { leaseMs: config.concurrency_lease_ms, fallbackInstances: config.fallback_instances },
        kit.logger,
      ).then((opened) => (limiter = opened)));
    const operatorLimits = limitsAnyone(config);
    if (operatorLimits) await openedLimiter();
    const releasing = new Set<Promise<void>>();

    function track(work: Promise<void>): void {
      releasing.add(work);
      void work.finally(() => releasing.delete(work));
    }

    /** Gives the slot back once the exchange has ended, however it ends, and corrects the tokens. */
    function releaseAfter(ctx: GatewayContext, limiter: Limiter, admission: Admission): void {
      const exchange = ctx.state.exchange;
      // Nothing was sent upstream (refused further in, e.g. 402): nothing was used.
      if (exchange === undefined) return track(limiter.release(admission, 0));
      // A stream outlives next(); `finished` resolves when it is delivered, aborted or broken.
      track(exchange.finished.then((outcome) => limiter.release(admission, outcome.usage === null ? null : usedTokens(outcome.usage))));
    }

    return {
      service: {
        get degraded() {
          return (limiter instanceof FallbackLimiter || limiter instanceof ClusterLimiter) && limiter.degraded;
        },
      },
      handle: async function rateLimitPlugin(ctx: GatewayContext, next: Next) {
        const auth = ctx.state.auth;
        // Without auth (plugin disabled) there is no key to limit; with no limits anywhere, nothing to do.
        if (auth === undefined || (!operatorLimits && auth.key.rateLimits === null)) return next();
        const subjects = subjectsOf(config, auth);
        if (subjects.length === 0) return next();

        const tokens = reservation(ctx);
        const active = limiter ?? (await openedLimiter());
        const decision = await active.acquire({ requestId: ctx.state.requestId, subjects, tokens });
        ctx.set(rateLimitHeaders(ctx.state.endpoint.family, { requests: viewOf(decision.usage, 'requests'), tokens: viewOf(decision.usage, 'tokens') }));
        if (!decision.ok) {
          ctx.state.rateLimit = { backend: decision.backend, refused: decision.refused, reservedTokens: 0 };
          throw refusal(decision, subjects, tokens);
        }
        const { admission } = decision;
        ctx.state.rateLimit = { backend: admission.backend, refused: null, reservedTokens: tokens };
        try {
          await next();
        } catch (error) {
          releaseAfter(ctx, active, admission);
          throw error;
        }
        releaseAfter(ctx, active, admission);
      },
      async close() {
        await Promise.all(releasing);
        if (opening !== null) await (await opening).close();
      },
    };
  },
};
