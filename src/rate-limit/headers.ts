/**
 * The rate-limit headers each protocol's clients know, on every response of a limited key:
 * OpenAI `x-ratelimit-{limit,remaining,reset}-{requests,tokens}` (reset as a duration, `1m0s`, `250ms`)
 * and Anthropic `anthropic-ratelimit-{requests,tokens}-{limit,remaining,reset}` (reset as an RFC 3339
 * instant). Where both the key and the account are limited, the one with less left is shown.
 */
import type { Subject, SubjectUsage } from './limiter';

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
  const seconds = `${Number(((whole % 60_000) / 1000).toFixed(3))}s`;
  return minutes > 0 ? `${minutes}m${seconds}` : seconds;
}

/** An instant as RFC 3339 in UTC, rounded up to the second so it never promises a reset too early. */
export function rfc3339(ms: number): string {
  return new Date(Math.ceil(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

export function rateLimitHeaders(
  family: 'openai' | 'anthropic',
  views: { readonly requests: LimitView | null; readonly tokens: LimitView | null },
  now: number = Date.now(),
): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const dimension of ['requests', 'tokens'] as const) {
    const view = views[dimension];
    if (view === null) continue;
    if (family === 'openai') {
      headers[`x-ratelimit-limit-${dimension}`] = String(view.limit);
      headers[`x-ratelimit-remaining-${dimension}`] = String(view.remaining);
      headers[`x-ratelimit-reset-${dimension}`] = openaiDuration(view.resetMs);
    } else {
      headers[`anthropic-ratelimit-${dimension}-limit`] = String(view.limit);
      headers[`anthropic-ratelimit-${dimension}-remaining`] = String(view.remaining);
      headers[`anthropic-ratelimit-${dimension}-reset`] = rfc3339(now + view.resetMs);
    }
  }
  return headers;
}

/** How a subject is named in a message. */
export function subjectLabel(subject: Subject): string {
  return subject.id.startsWith('key:') ? 'API key' : 'account';
}
