/**
 * Rate limits at every level (the key, its member in an organisation, its account; one bucket each,
 * src/rate-limit/levels.ts): requests and tokens per minute, requests in flight. A request
 * past a limit gets a 429 before billing holds anything and before any upstream call; every response
 * of a limited key carries its protocol's rate-limit headers. Counting lives in `src/rate-limit`; this
 * file decides what is limited, when a request's slot and tokens are given back, and what the client
 * is told.
 */
import { maxOutputTokens } from '../../src/billing/hold-amount';
import { imageTokensPerImage } from '../../src/billing/image-billing';
import type { RateLimitPluginConfig } from '../../src/config/types';
import type { GatewayContext, Next } from '../../src/kernel/context';
import type { AuthState } from '../auth';
import { need } from '../../src/kernel/need';
import { GatewayError } from '../../src/kernel/errors';
import type { PluginInstance } from '../../src/kernel/plugin';
import type { PluginDefinition } from '../kit';
import { TOKEN_KINDS, type Usage } from '../../src/protocols/types';
import { ClusterLimiter } from '../../src/rate-limit/cluster';
import { FallbackLimiter, openLimiter } from '../../src/rate-limit/fallback';
import { rateLimitHeaders, viewOf } from '../../src/rate-limit/headers';
import { levelLimitName, levelSubjects, limitsSomething, refusingLevel } from '../../src/rate-limit/levels';
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

/** Whether gateway.yaml limits any key or account at all; if not, only limits stored with keys and accounts can. */
function limitsAnyone(config: RateLimitPluginConfig): boolean {
  const overrides = [...Object.values(config.keys), ...Object.values(config.accounts)];
  return limitsSomething(config.per_key) || limitsSomething(config.per_account) || overrides.some((o) => Object.values(o).some((v) => v > 0));
}

/** Whether the request's key, or a level above it, carries stored rate limits. */
function storedLimits({ key, identity }: AuthState): boolean {
  return key.rateLimits !== null || identity?.accountLimits?.rateLimits !== undefined || (identity?.memberLimits?.rateLimits ?? null) !== null;
}

/** The request's buckets, one per level that limits it (src/rate-limit/levels.ts). */
function subjectsOf(config: RateLimitPluginConfig, { key, account, identity }: AuthState): Subject[] {
  return levelSubjects(config, {
    keyId: key.id,
    keyLimits: key.rateLimits,
    accountId: account.id,
    accountLimits: identity?.accountLimits?.rateLimits,
    memberAccountId: key.memberAccountId ?? null,
    memberLimits: identity?.memberLimits?.rateLimits,
  });
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

/** The 429 for a refused decision: it names the level whose bucket refused and when it lets the request through. */
function refusal(decision: Extract<Decision, { ok: false }>, subjects: readonly Subject[], tokens: number): GatewayError {
  const chosen = refusingLevel(subjects, decision.usage, tokens, decision);
  const { limits: applied, resetMs } = decision.usage[chosen.subject];
  const whose = levelLimitName(chosen.level);
  const seconds = Math.max(1, Math.ceil(Math.max(0, resetMs) / 1000));
  const options = { headers: { 'retry-after': String(chosen.refused === 'concurrency' ? 1 : seconds) }, refusedBy: chosen.level };
  switch (chosen.refused) {
    case 'requests':
      return new GatewayError('TOLLGATE_ERR_RATE_LIMIT_REQUESTS', `${whose} of ${applied.rpm} requests per minute is reached. Retry in ${seconds} s.`, options);
    case 'tokens': {
      const message =
        tokens > applied.tpm
          ? `This request reserves ${tokens} tokens (input estimate plus its output limit), more than ${lowerFirst(whose)} of ${applied.tpm} tokens per minute; lower max_tokens.`
          : `${whose} of ${applied.tpm} tokens per minute is reached: this request reserves ${tokens} (input estimate plus its output limit). Retry in ${seconds} s, or lower max_tokens.`;
      return new GatewayError('TOLLGATE_ERR_RATE_LIMIT_TOKENS', message, options);
    }
    case 'concurrency':
      return new GatewayError(
        'TOLLGATE_ERR_RATE_LIMIT_CONCURRENCY',
        `Too many concurrent requests: ${lowerFirst(whose)} is ${applied.concurrency} requests in flight at once. Retry when one has finished.`,
        options,
      );
  }
}

function lowerFirst(text: string): string {
  return text.charAt(0).toLowerCase() + text.slice(1);
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
    // Releases under way, counted for close; the handlers are made once, so a request's release makes
    // one promise and no closure of its own (a Set entry and a `finally` before: docs/benchmarks.md).
    let releasing = 0;
    const allReleased: (() => void)[] = [];
    const oneReleased = (): void => {
      releasing -= 1;
      if (releasing === 0) for (const resolve of allReleased.splice(0)) resolve();
    };
    const releaseFailed = (error: unknown): void => {
      oneReleased();
      kit.logger.warn({ err: error }, 'rate limit: giving a slot back failed');
    };

    function track(work: Promise<void>): void {
      releasing += 1;
      void work.then(oneReleased, releaseFailed);
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
        if (auth === undefined || (!operatorLimits && !storedLimits(auth))) return next();
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
        if (releasing > 0) await new Promise<void>((resolve) => allReleased.push(resolve));
        if (opening !== null) await (await opening).close();
      },
    };
  },
};
