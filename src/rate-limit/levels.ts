/**
 * The levels a request's rate limits come from, each its own bucket (issue 44: limits at every
 * level, the tightest wins):
 *
 *   account  the operator's limits on the key's account or organisation: gateway.yaml's `per_account`
 *            and `accounts`, and what an administrator set on the account (its operator limits). One
 *            bucket for every key the account has or makes, playground keys included.
 *   member   the organisation's limits for the member whose key it is: one bucket for all of that
 *            member's keys in the organisation.
 *   key      the key's own (gateway.yaml's `per_key` and `keys`, the owner's and the operator's limits
 *            on the key): one bucket per key.
 *
 * A limit above the key is never folded into each key: three keys under an account limited to 10 rpm
 * share 10 rpm, not 30. Every bucket is a subject of the one limiter decision (one Redis script), so
 * all of them hold across instances with no round trip more.
 */
import type { RateLimitPluginConfig, RateLimits } from '../config/types';
import type { KeyRateLimits } from '../store/store';
import type { Dimension, Subject, SubjectUsage } from './limiter';

export type RateLevel = 'account' | 'member' | 'key';

/** What the levels of one request are read from: the authenticated key, its account, the limits above it. */
export interface LevelSource {
  readonly keyId: string;
  /** The key's own limits (the owner's and the operator's on the key, already the tighter of them). */
  readonly keyLimits: KeyRateLimits | null;
  readonly accountId: string;
  /** The operator's limits on the account, as an administrator set them (absent: none). */
  readonly accountLimits: KeyRateLimits | null | undefined;
  /** The member whose key it is, for a key made in an organisation. */
  readonly memberAccountId: string | null;
  /** The organisation's limits for that member (absent: none). */
  readonly memberLimits: KeyRateLimits | null | undefined;
}

const NONE: RateLimits = { rpm: 0, tpm: 0, concurrency: 0 };

function configured(base: RateLimits, overrides: Readonly<Record<string, Partial<RateLimits>>>, id: string): RateLimits {
  return Object.hasOwn(overrides, id) ? { ...base, ...overrides[id] } : base;
}

/** The lower of two limits, 0 meaning none. */
function lower(a: number, b: number | undefined): number {
  if (b === undefined || b <= 0) return a;
  return a === 0 ? b : Math.min(a, b);
}

/** `base` tightened by a stored limit: each field the lower of the two. */
function tightened(base: RateLimits, stored: KeyRateLimits | null | undefined): RateLimits {
  if (stored == null) return base;
  return { rpm: lower(base.rpm, stored.rpm), tpm: lower(base.tpm, stored.tpm), concurrency: lower(base.concurrency, stored.concurrency) };
}

export function limitsSomething({ rpm, tpm, concurrency }: RateLimits): boolean {
  return rpm > 0 || tpm > 0 || concurrency > 0;
}

/**
 * The request's limited buckets, key first, then member, then account; a bucket that limits nothing
 * is left out. Subject ids name the level (`key:`, `member:<org>:<member>`, `account:`).
 */
export function levelSubjects(config: RateLimitPluginConfig, source: LevelSource): Subject[] {
  const subjects: Subject[] = [];
  const key = tightened(configured(config.per_key, config.keys, source.keyId), source.keyLimits);
  if (limitsSomething(key)) subjects.push({ id: `key:${source.keyId}`, limits: key });
  if (source.memberAccountId !== null && source.memberLimits != null) {
    const member = tightened(NONE, source.memberLimits);
    if (limitsSomething(member)) subjects.push({ id: `member:${source.accountId}:${source.memberAccountId}`, limits: member });
  }
  const account = tightened(configured(config.per_account, config.accounts, source.accountId), source.accountLimits);
  if (limitsSomething(account)) subjects.push({ id: `account:${source.accountId}`, limits: account });
  return subjects;
}

function levelOf(subject: Pick<Subject, 'id'>): RateLevel {
  if (subject.id.startsWith('key:')) return 'key';
  return subject.id.startsWith('member:') ? 'member' : 'account';
}

/** Higher levels first when two refuse for as long: the client cannot lift the operator's limit, nor its organisation's. */
const RANK: Readonly<Record<RateLevel, number>> = { account: 2, member: 1, key: 0 };

/** A concurrency slot frees when some request ends: no time is known, so the client is told a second. */
const CONCURRENCY_WAIT_MS = 1000;

/** The bucket a refusal names, what of it refused, and how long until the request could pass it. */
export interface LevelRefusal {
  /** Index into the request's subjects. */
  readonly subject: number;
  readonly level: RateLevel;
  readonly refused: Dimension;
  /** Milliseconds until this bucket would admit the request; Infinity when no wait will (a reservation above its tpm). */
  readonly waitMs: number;
}

/** The limit of one bucket the request exceeds that takes longest to pass, or null when it exceeds none. */
function exceededIn(usage: SubjectUsage, tokens: number): { refused: Dimension; waitMs: number } | null {
  const { rpm, tpm, concurrency } = usage.limits;
  const reset = Math.max(0, usage.resetMs);
  let worst: { refused: Dimension; waitMs: number } | null = null;
  const consider = (refused: Dimension, waitMs: number) => {
    if (worst === null || waitMs > worst.waitMs) worst = { refused, waitMs };
  };
  if (rpm > 0 && usage.requests + 1 > rpm) consider('requests', reset);
  if (tpm > 0 && usage.tokens + tokens > tpm) consider('tokens', tokens > tpm ? Infinity : reset);
  if (concurrency > 0 && usage.inflight + 1 > concurrency) consider('concurrency', CONCURRENCY_WAIT_MS);
  return worst;
}

/**
 * Which level a refusal names when more than one bucket is full: the one the client must wait for
 * longest (until it resets, the request is refused whatever the others say), and on a tie the
 * higher level. `usage` is the refused decision's (counters before the request, nothing counted);
 * `decided` is the back end's own first refusal, kept should the counters show none.
 */
export function refusingLevel(
  subjects: readonly Subject[],
  usage: readonly SubjectUsage[],
  tokens: number,
  decided: { readonly subject: number; readonly refused: Dimension },
): LevelRefusal {
  let chosen: LevelRefusal | null = null;
  subjects.forEach((subject, i) => {
    const exceeded = exceededIn(usage[i], tokens);
    if (exceeded === null) return;
    const level = levelOf(subject);
    const candidate: LevelRefusal = { subject: i, level, ...exceeded };
    if (chosen === null || candidate.waitMs > chosen.waitMs || (candidate.waitMs === chosen.waitMs && RANK[level] > RANK[chosen.level])) chosen = candidate;
  });
  if (chosen !== null) return chosen;
  const subject = subjects[decided.subject];
  const waitMs = decided.refused === 'concurrency' ? CONCURRENCY_WAIT_MS : Math.max(0, usage[decided.subject].resetMs);
  return { subject: decided.subject, level: levelOf(subject), refused: decided.refused, waitMs };
}

/** Whose limit it is, as a refusal says it: "The operator's limit on this account", … */
export function levelLimitName(level: RateLevel): string {
  switch (level) {
    case 'account':
      return "The operator's limit on this account";
    case 'member':
      return "The organisation's limit for this member";
    case 'key':
      return "This API key's limit";
  }
}
