/**
 * The failover policy of one request: the upstream plugin's defaults with the model's overrides, what
 * counts as worth another attempt, and how long to wait before it.
 */
import type { FailoverPolicy, ModelConfig, RetryableOutcome } from '../config/types';

/** Client errors: another route would refuse the same request, so these are never retried. */
const NEVER_RETRIED = new Set([400, 401, 403, 404, 413, 422]);

export function effectivePolicy(defaults: FailoverPolicy, model: ModelConfig): FailoverPolicy {
  return model.failover === undefined ? defaults : { ...defaults, ...model.failover };
}

/** What failed, as the policy's `retry_on` names it: a transport failure or an upstream status. */
export type Outcome = { readonly kind: 'connect_error' | 'reset' | 'timeout' } | { readonly kind: 'status'; readonly status: number } | { readonly kind: 'invalid' | 'aborted' };

export function isRetryable(outcome: Outcome, policy: FailoverPolicy): boolean {
  switch (outcome.kind) {
    case 'aborted':
      return false;
    case 'invalid':
      // A garbled reply is the provider's fault, as a 502 would be.
      return policy.retry_on.includes(502);
    case 'status':
      return !NEVER_RETRIED.has(outcome.status) && policy.retry_on.includes(outcome.status as RetryableOutcome);
    default:
      return policy.retry_on.includes(outcome.kind);
  }
}

/**
 * The wait before attempt number `next` (2 for the first retry): full jitter over an exponential
 * window, or the provider's retry-after when it asked for longer, both capped by `backoff_max_ms`.
 * A retry that moves to another route does not wait for the first route's retry-after.
 */
export function backoffMs(next: number, policy: FailoverPolicy, retryAfterMs: number | null, sameRoute: boolean, random: () => number = Math.random): number {
  const window = Math.min(policy.backoff_max_ms, policy.backoff_base_ms * 2 ** Math.max(0, next - 2));
  const jittered = random() * window;
  const asked = sameRoute && retryAfterMs !== null ? retryAfterMs : 0;
  return Math.min(policy.backoff_max_ms, Math.max(jittered, asked));
}
