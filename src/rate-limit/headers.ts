/**
 * The rate-limit headers each protocol's clients know, on every response of a limited key:
 * OpenAI `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` (reset as a duration, `1m0s`, `250ms`)
 * and Anthropic `anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}` (reset as an RFC 3339
 * instant). Where more than one level limits the request (key, member, account), the one with less left
 * is shown.
 */
import type { SubjectUsage } from './limiter';

/** One dimension's figures as shown to the client. */
export interface LimitView {
  readonly limit: number;
  readonly remaining: number;
  readonly resetMs: number;
}

/** The tightest limit of a dimension across the subjects, or null when none limits it. */
export function viewOf(usage: readonly SubjectUsage[], dimension: 'requests' | 'tokens'): LimitView | null {
  let view: LimitView | null = null;
  for (const subject of usage) {
    const limit = dimension === 'requests' ? subject.limits.rpm : subject.limits.tpm;
    if (limit === 0) continue;
    const remaining = Math.max(0, limit - subject[dimension]);
    if (view === null || remaining < view.remaining) view = { limit, remaining, resetMs: Math.max(0, subject.resetMs) };
  }
  return view;
}

/** A duration as OpenAI writes it (Go's `time.Duration` style): `250ms`, `12.5s`, `1m0s`. */
export function openaiDuration(ms: number): string {
  const whole = Math.ceil(ms);
  if (whole < 1000) return `${whole}ms`;
  const minutes = Math.floor(whole / 60_000);
  // Whole milliseconds as seconds, trailing zeros dropped (`59.952s`, `12.5s`, `1m0s`), without toFixed.
  const millis = whole % 60_000;
  const fraction = millis % 1000;
  const seconds = fraction === 0 ? `${millis / 1000}s` : `${(millis - fraction) / 1000}.${String(fraction).padStart(3, '0').replace(/0+$/, '')}s`;
  return minutes > 0 ? `${minutes}m${seconds}` : seconds;
}

/** An instant as RFC 3339 in UTC, rounded up to the second so it never promises a reset too early. */
export function rfc3339(ms: number): string {
  return new Date(Math.ceil(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

type Dimension = 'requests' | 'tokens';

/** Each family's header names per dimension, made once: names built per response cost CPU in setHeader. */
const HEADER_NAMES = {
  openai: {
    requests: ['x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests'],
    tokens: ['x-ratelimit-limit-tokens', 'x-ratelimit-remaining-tokens', 'x-ratelimit-reset-tokens'],
  },
  anthropic: {
    requests: ['anthropic-ratelimit-requests-limit', 'anthropic-ratelimit-requests-remaining', 'anthropic-ratelimit-requests-reset'],
    tokens: ['anthropic-ratelimit-tokens-limit', 'anthropic-ratelimit-tokens-remaining', 'anthropic-ratelimit-tokens-reset'],
  },
} as const satisfies Record<'openai' | 'anthropic', Record<Dimension, readonly [limit: string, remaining: string, reset: string]>>;

const DIMENSIONS: readonly Dimension[] = ['requests', 'tokens'];

export function rateLimitHeaders(
  family: 'openai' | 'anthropic',
  views: { readonly requests: LimitView | null; readonly tokens: LimitView | null },
  now: number = Date.now(),
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const dimension of DIMENSIONS) {
    const view = views[dimension];
    if (view === null) continue;
    const [limit, remaining, reset] = HEADER_NAMES[family][dimension];
    headers[limit] = String(view.limit);
    headers[remaining] = String(view.remaining);
    headers[reset] = family === 'openai' ? openaiDuration(view.resetMs) : rfc3339(now + view.resetMs);
  }
  return headers;
}
