/**
 * The contract of a rate-limit back end (Kong's `policies/`: one shape, a local and a Redis
 * implementation) and the decision rule both apply.
 *
 * Window semantics: fixed windows of one minute, one per subject (a key, a member, an account), opened by
 * the subject's first admitted request and closed a minute later, when every counter of the window
 * starts again from zero. A window anchored on its first request admits a burst exactly (nothing
 * straddles a clock-aligned boundary); like any fixed window it lets up to twice the limit through
 * around the moment one window ends and the next begins.
 */
import type { RateLimits } from '../config/types';

export const WINDOW_MS = 60_000;

/** What a limit counts; also OpenAI's `error.type` for the first two. */
export type Dimension = 'requests' | 'tokens' | 'concurrency';

/** A bucket limits apply to: `key:<id>`, `member:<organisation>:<member>` or `account:<id>` (levels.ts). */
export interface Subject {
  readonly id: string;
  /** The subject's own limits (0 = unlimited); a back end may scale them down (Redis outage). */
  readonly limits: RateLimits;
}

export interface LimitRequest {
  readonly requestId: string;
  /** Key first, then member, then account; a request is admitted only when every subject admits it. */
  readonly subjects: readonly Subject[];
  /** Tokens to reserve against the tokens-per-minute limits. */
  readonly tokens: number;
}

/** A subject's counters as the decision left them (after admission when admitted). */
export interface SubjectUsage {
  /** The limits applied, after any scaling: what headers and messages report. */
  readonly limits: RateLimits;
  readonly requests: number;
  readonly tokens: number;
  readonly inflight: number;
  /** Milliseconds until the subject's window closes. */
  readonly resetMs: number;
}

/** An admitted request, to be handed back to `release` exactly once. */
export interface Admission {
  readonly requestId: string;
  readonly subjects: readonly Subject[];
  /** Start of each subject's window (the back end's clock), so a late correction hits the right one. */
  readonly windows: readonly number[];
  readonly tokens: number;
  readonly backend: 'local' | 'redis';
}

export type Decision =
  | { readonly ok: true; readonly admission: Admission; readonly usage: readonly SubjectUsage[] }
  | {
      readonly ok: false;
      readonly refused: Dimension;
      /** Index into the request's subjects of the one whose limit refused it. */
      readonly subject: number;
      readonly usage: readonly SubjectUsage[];
      readonly backend: 'local' | 'redis';
    };

export interface Limiter {
  /** Checks every limit of every subject and, when all admit, counts the request in all of them. */
  acquire(request: LimitRequest): Promise<Decision>;
  /**
   * Ends an admission: frees its concurrency slots and replaces its reserved tokens with `actualTokens`
   * in the windows it was counted in (null keeps the reservation). Never rejects.
   */
  release(admission: Admission, actualTokens: number | null): Promise<void>;
  close(): Promise<void>;
}

/** Counters of one subject before a decision. */
export interface Counters {
  readonly requests: number;
  readonly tokens: number;
  readonly inflight: number;
}

/**
 * The rule both back ends apply (the Redis script in Lua): the first limit, in subject order and then
 * requests, tokens, concurrency, that one more request of `tokens` tokens would exceed; null when none.
 */
export function firstExceeded(
  limits: readonly RateLimits[],
  counters: readonly Counters[],
  tokens: number,
): { refused: Dimension; subject: number } | null {
  for (let i = 0; i < limits.length; i++) {
    const { rpm, tpm, concurrency } = limits[i];
    const now = counters[i];
    if (rpm > 0 && now.requests + 1 > rpm) return { refused: 'requests', subject: i };
    if (tpm > 0 && now.tokens + tokens > tpm) return { refused: 'tokens', subject: i };
    if (concurrency > 0 && now.inflight + 1 > concurrency) return { refused: 'concurrency', subject: i };
  }
  return null;
}

/** Limits for an instance enforcing its share of a cluster's limits: each divided by `divisor`, rounded up. */
export function shareOf(limits: RateLimits, divisor: number): RateLimits {
  if (divisor === 1) return limits;
  const part = (limit: number) => (limit === 0 ? 0 : Math.ceil(limit / divisor));
  return { rpm: part(limits.rpm), tpm: part(limits.tpm), concurrency: part(limits.concurrency) };
}
