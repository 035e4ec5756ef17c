/**
 * What was used, read back: charges listed, found, totalled and summed by one dimension, each
 * account's last request, refused requests (refusals.ts) and the response ids relayed to each account
 * (relayed-responses.ts). Nothing here moves money.
 */
import type { TokenCounts } from '../protocols/types';
import type { ChargeOrigin, ChargeRecord } from './ledger-store';
import type { RefusalStore } from './refusals';
import type { RelayedResponseStore } from './relayed-responses';

/** One UTC day of an account's (or everyone's) charges. */
export interface DailyUsage {
  /** `YYYY-MM-DD`, UTC. */
  readonly day: string;
  readonly requests: number;
  readonly cost: bigint;
}

export interface ChargeFilter {
  readonly accountId?: string;
  /** Only the charges made for this member of the organisation (through their keys in it). */
  readonly memberAccountId?: string;
  readonly keyId?: string;
  readonly model?: string;
  readonly sessionId?: string;
  /** Only the charges of this origin (the playground's). */
  readonly origin?: ChargeOrigin;
  /** Only charges made in a session (any). */
  readonly inSession?: boolean;
  readonly since?: Date;
  readonly until?: Date;
  /** Newest first; at most this many (default 100). */
  readonly limit?: number;
  /** Rows skipped first, for paging. */
  readonly offset?: number;
  /** Any of these models (an empty list matches none). */
  readonly models?: readonly string[];
  readonly endpoint?: string;
  /** `ok`: answered below 400; `failed`: 400 or above. */
  readonly status?: 'ok' | 'failed';
  /** Paged by cursor: ties broken by request id, and only charges older than `before` (null: the first page). */
  readonly page?: { readonly before: ChargeCursor | null };
}

/** Where a page of charges ended. */
export interface ChargeCursor {
  readonly createdAt: Date;
  readonly requestId: string;
}

/** Every charge a filter matches, summed. */
export interface ChargeTotals {
  readonly requests: number;
  readonly cost: bigint;
  /** Those answered with a status of 400 or above. */
  readonly failed: number;
}

/** What usage is summed by: `account` and `provider` serve the operator's gateway totals. */
export const USAGE_GROUPS = ['model', 'key', 'day', 'session', 'account', 'provider'] as const;
/** `member`: an organisation's charges by the member whose key made them (its owners' and admins' question). */
export type UsageGroup = (typeof USAGE_GROUPS)[number] | 'member';

/**
 * By session, the console playground's turns (origin `playground`, in a session) are one group under
 * this name rather than a group per visit. A session id is printable ASCII without spaces
 * (src/billing/client-trail.ts), so no client's session can be called this.
 */
export const PLAYGROUND_SESSION_GROUP = 'console playground';

export interface UsageSummaryQuery {
  /** Null: every account (an operator's question). */
  readonly accountId: string | null;
  readonly groupBy: UsageGroup;
  /** Only the charges made for this member of the organisation `accountId` (through their keys in it). */
  readonly memberAccountId?: string;
  /** Only this session's charges. */
  readonly sessionId?: string;
  /** Only the charges of this origin (the playground's). */
  readonly origin?: ChargeOrigin;
  /**
   * By session, leave out the charges made outside any session: a list of sessions wants them not,
   * a summary does (its rows then add up to what was charged, the sessionless ones in a null row).
   */
  readonly namedSessionsOnly?: boolean;
  /** Also sum what the charges cost upstream (the operator's question; an account never asks). */
  readonly upstreamCost?: boolean;
  readonly since: Date;
  /** Exclusive. */
  readonly until: Date;
  readonly limit: number;
  readonly offset: number;
}

/** One group of a usage summary: its requests, errors (status 400 or above), cost and tokens. */
export interface UsageSummaryRow extends TokenCounts {
  /** The model, key id, `YYYY-MM-DD` day, session id, account id, provider or member's account id; null for charges without one (no provider, no session). */
  readonly group: string | null;
  readonly requests: number;
  readonly errors: number;
  readonly cost: bigint;
  /** The operator's sums, when the query asked for them (upstreamCost); else null. */
  readonly upstream: UpstreamSums | null;
  readonly firstAt: Date;
  readonly lastAt: Date;
  /** The models used, sorted; only when grouped by session, else null. */
  readonly models: readonly string[] | null;
}

/** What a group of charges cost upstream, for the operator's margin. */
interface UpstreamSums {
  /** What the group's charges with a known upstream cost cost the operator (charges.upstream_cost summed). */
  readonly cost: bigint;
  /** What those same charges, the ones with a known upstream cost, charged: the other side of a margin. */
  readonly costedCharged: bigint;
  /** Charges whose upstream cost is unknown, so `cost` leaves them out. */
  readonly uncosted: number;
}

/** A key's recent activity, for the Tokens page. */
export interface KeyActivity {
  readonly keyId: string;
  readonly lastUsedAt: Date | null;
  /** Spent since the start of the current UTC day, and of the current UTC month. */
  readonly spentToday: bigint;
  readonly spentMonth: bigint;
}

export interface UsageStore {
  listCharges(filter: ChargeFilter): Promise<ChargeRecord[]>;
  /** Totals over every charge `filter` matches (its limit, offset and page aside). */
  chargeTotals(filter: ChargeFilter): Promise<ChargeTotals>;
  /** One charge by Tollgate's request id; null when there is none. */
  findCharge(requestId: string): Promise<ChargeRecord | null>;
  /** Charges in [since, until) summed by one dimension: by day oldest first, by session newest first, else dearest first. */
  usageSummary(query: UsageSummaryQuery): Promise<UsageSummaryRow[]>;
  /** Last use and today's and this month's spend of each of the account's keys that has charges. */
  keyActivity(accountId: string, dayStart: Date, monthStart: Date): Promise<KeyActivity[]>;
  /** Requests and cost per UTC day from `since` on, of one account (or every account when null); days without charges are left out. */
  dailyUsage(accountId: string | null, since: Date): Promise<DailyUsage[]>;
  /** When each account last made a request (its newest charge); accounts that never did are absent. */
  lastRequests(): Promise<ReadonlyMap<string, Date>>;

  /** Refused requests, beside the ledger (refusals.ts). */
  readonly refusals: RefusalStore;

  /** Response and conversation ids relayed to each account from native Responses routes (relayed-responses.ts). */
  readonly relayedResponses: RelayedResponseStore;
}
