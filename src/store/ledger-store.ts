/**
 * The money as the store keeps it: holds, charges, credits and the balance they move, and the sums
 * `tollgate ledger verify` checks. Balance = credits − charges − debits, kept in the account row by the
 * same transaction that appends to the ledger. The rules that decide the amounts live in src/money;
 * a store only keeps them, atomically.
 */
import type { TokenCounts, TokenKind, ToolCalls } from '../protocols/types';
import type { Admission } from '../money/admission';
import type { BudgetPeriod, RevisionFreshness } from './access-store';
import type { CreditKind } from './payments';

/**
 * What a budget applies to: a key's spend, a member's in an organisation (every key they made in it;
 * its id is `memberBudgetId`'s), or an account's (every key of it). `budget-owner.ts` says which
 * charges and holds count in each.
 */
export type BudgetScope = 'key' | 'member' | 'account';

/** What a session budget applies to: a key's spend in the session, or its account's. */
export type SessionScope = 'key' | 'account';

/**
 * One budget as a hold checks it: the spend of `scope` `id` charged in [start, end) plus what it holds
 * now, plus the new hold, must stay within `amount`.
 */
export interface BudgetCheck {
  readonly scope: BudgetScope;
  readonly id: string;
  readonly amount: bigint;
  readonly period: BudgetPeriod;
  readonly timezone: string;
  readonly start: Date;
  readonly end: Date;
}

/**
 * One session budget as a hold checks it: what `scope` `id` was charged in the client's session
 * `sessionId` (its whole life: a session has no period) plus what that session holds now, plus the new
 * hold, must stay within `amount`.
 */
export interface SessionBudgetCheck {
  readonly scope: SessionScope;
  readonly id: string;
  readonly sessionId: string;
  readonly amount: bigint;
}

/**
 * Funds held for one request while it runs: the most it can cost. Held funds cannot be spent twice;
 * the hold is removed when the request's charge is recorded, or by the sweeper once it expires (the
 * instance that made it died).
 */
export interface Hold {
  readonly requestId: string;
  readonly accountId: string;
  readonly keyId: string;
  /** The member whose key (in the organisation `accountId`) made the request; absent or null: none. */
  readonly memberAccountId?: string | null;
  readonly amount: bigint;
  readonly expiresAt: Date;
  /** False when the key (as authenticated) has no spend limit, sparing the book a lookup. */
  readonly keyLimited?: boolean;
  /** The budgets that apply to the request, each checked in the same step as the balance. */
  readonly budgets?: readonly BudgetCheck[];
  /**
   * The session budgets that apply (the request named a session), checked in the same step; a hold
   * checked against one counts against its session until the request is charged or the hold expires.
   */
  readonly sessionBudgets?: readonly SessionBudgetCheck[];
}

/** Whether a hold was taken, or which limit refused it (`src/money/admission.ts` says in what order). */
export type HoldResult = Admission<BudgetCheck, SessionBudgetCheck>;

/** Where a charge's token counts came from (`none`: nothing was produced, nothing is owed). */
export type UsageSourceRecord = 'upstream' | 'estimated' | 'partial' | 'none';

/**
 * The prices a charge used, in nano-units as decimal strings (per 1M tokens of each kind, per 1,000
 * calls of each tool), so its cost can be recomputed from its row alone after the price table changed.
 */
export interface ChargePrices {
  readonly tokens: Readonly<Record<TokenKind, string>>;
  readonly tool_calls: Readonly<Record<string, string>>;
  /** The price of one image at the size and quality charged (`size/quality`), for a per-image model. */
  readonly per_image?: { readonly key: string; readonly nano: string };
}

/**
 * The service level a charge was priced at (`billing/service-levels.ts`). A new kind of premium is a
 * field here: the charges columns, the views and the CSV do not compile until they carry it.
 */
export interface ServiceLevel {
  /** The tier the reply reported (`priority`, `flex`, `fast`, `default`…); null when it named none. */
  readonly serviceTier: string | null;
  /** Whether the request's input was above the long-context threshold, so every token paid those rates. */
  readonly longContext: boolean;
}

/**
 * One request's entry in the ledger: recorded exactly once per request id, whatever it cost. The
 * request id is Tollgate's own, never the client's, so no client can make two requests one charge.
 */
export interface ChargeRecord extends TokenCounts, ServiceLevel {
  readonly requestId: string;
  /** The client's own `x-request-id`, kept for correlation only; null when it sent none. */
  readonly clientRequestId: string | null;
  readonly accountId: string;
  readonly keyId: string;
  readonly model: string;
  readonly provider: string | null;
  readonly endpoint: string;
  /** Calls of per-call-billed server tools, by tool name. */
  readonly toolCalls: ToolCalls;
  /** Images the reply delivered (the Images API's `data`); 0 (or absent, on records made before images) elsewhere. */
  readonly images?: number;
  /** Nano-units charged; 0 for failed requests and free models. */
  readonly cost: bigint;
  /** What was held for the request before it ran; 0 for a free model. */
  readonly held: bigint;
  /** The part of `cost` above `held` (billing.overage: charge): charged, and so recorded. */
  readonly overage: bigint;
  /** What the upstream's usage cost above the hold but was not charged (billing.overage: cap). */
  readonly unbilled: bigint;
  /**
   * What the request cost the operator: the same usage at the cost of the route that answered (gateway.yaml
   * `routes[].cost`, else the model catalog's list price for that provider's model), in nano-units. Null
   * when that route has no known cost; absent on records made before costs were kept.
   */
  readonly upstreamCost?: bigint | null;
  /** The prices `cost` was computed at (the tier's, or the long-context ones); null for a free model. */
  readonly prices: ChargePrices | null;
  readonly usageSource: UsageSourceRecord;
  /** HTTP status the client got (499: it left first). */
  readonly status: number;
  readonly outcome: 'delivered' | 'aborted' | 'failed';
  readonly latencyMs: number;
  readonly createdAt: Date;
  /**
   * What the request looked like on its way through, for usage analytics; optional so a record made
   * without them (a CLI import, an older set-aside record) still fits. Never prompt or completion text.
   */
  readonly sessionId?: string | null;
  /** The model name the client sent, when it differs from `model` (an alias or a `*` pattern). */
  readonly requestedModel?: string | null;
  /** The provider's own model name that served the answer (or was last tried); null when none was. */
  readonly servedModel?: string | null;
  /** Every upstream attempt in order, failovers and skipped routes included. */
  readonly attempts?: readonly ChargeAttempt[];
  /** Milliseconds from the request's admission to the first byte of a streamed answer; null otherwise. */
  readonly ttfbMs?: number | null;
  /** The client's User-Agent, truncated. */
  readonly userAgent?: string | null;
  /** Where the request came from when Tollgate knows better than the key: `playground`; else null. */
  readonly origin?: ChargeOrigin | null;
  /**
   * The member of the organisation `accountId` whose key made the request (the key's `memberAccountId`);
   * absent or null for an account's own key.
   */
  readonly memberAccountId?: string | null;
}

/** One upstream attempt of a charge: where it went and how it ended (`ok`, a failure kind, `status_<code>`, `breaker_open`). */
export interface ChargeAttempt {
  readonly provider: string;
  readonly outcome: string;
  readonly ms: number;
}

export type ChargeOrigin = 'playground';

/** A charge the store refused to record, kept whole with the store's error (see `set-aside.ts`). */
export interface SetAsideCharge {
  readonly requestId: string;
  readonly accountId: string;
  /** The store's error when it refused the charge. */
  readonly error: string;
  /** The charge as JSON (amounts as decimal strings), enough to record it by hand. */
  readonly record: string;
  readonly createdAt: Date;
}

export interface NewCredit {
  readonly accountId: string;
  /** Nano-units, > 0. */
  readonly amount: bigint;
  readonly kind: CreditKind;
  /** Who did it: an account name, `cli`, or the redeeming account. */
  readonly actor: string | null;
  readonly note: string | null;
}

export interface CreditRecord extends NewCredit {
  readonly id: string;
  readonly createdAt: Date;
}

export interface AccountBalance {
  /** Credits minus charges, in nano-units. */
  readonly balance: bigint;
  /** Held for requests under way. */
  readonly held: bigint;
}

/** One account's ledger sums and its stored balance; `verify` compares them. */
export interface LedgerTotals {
  readonly accountId: string;
  readonly accountName: string;
  readonly credits: bigint;
  readonly charges: bigint;
  /** Funds taken back from card payments (refunds, disputes). */
  readonly debits: bigint;
  readonly balance: bigint;
  readonly held: bigint;
  /** Σ of the open holds' amounts, which `held` must equal. */
  readonly openHolds: bigint;
}

export interface KeySpend {
  readonly spendLimit: bigint | null;
  readonly spent: bigint;
}

export interface LedgerStore {
  /**
   * Only in a store that is not shared (the embedded one): a number that changes whenever a stored
   * balance may have moved other than by this process's own charges (recordCharges): a credit, a
   * redemption, any other connection's commit (the CLI). The in-process balance book keeps a balance
   * it read while this stays put; without it, the book reads the balance at every hold.
   */
  fundsRevision?(asOf?: RevisionFreshness): number;
  /** A key's spend limit and settled spend; null when no such key exists. */
  keySpend(keyId: string): Promise<KeySpend | null>;
  /** What the ledger charged a key, a member (their keys in the organisation) or an account (all its keys) from `since` until before `until`, in nano-units. */
  periodSpend(scope: BudgetScope, id: string, since: Date, until: Date): Promise<bigint>;
  /** What the ledger charged a key or an account (all its keys) in the client's session `sessionId`, ever. */
  sessionSpend(scope: SessionScope, id: string, sessionId: string): Promise<bigint>;

  /**
   * Holds `amount` for a request, atomically: only if the account's balance minus what it already
   * holds covers it, and the key's spend limit (if any) minus its spent and held amounts covers it.
   */
  holdFunds(hold: Hold): Promise<HoldResult>;
  /**
   * Records charges, all in one transaction: each request id once (a repeated id changes nothing), its
   * cost taken from the account's balance and added to the key's spend, and its hold (if any) removed.
   * Returns how many were new.
   */
  recordCharges(charges: readonly ChargeRecord[]): Promise<number>;
  /**
   * Keeps a charge the store refused to record (see `set-aside.ts`) with the error, once per request
   * id; it changes no balance.
   */
  setAsideCharge(charge: ChargeRecord, error: string): Promise<void>;
  /** The charges set aside, newest first. */
  listSetAsideCharges(limit?: number): Promise<SetAsideCharge[]>;
  /** Removes holds without charging (the sweeper's release of holds whose instance died). */
  releaseHolds(requestIds: readonly string[]): Promise<number>;
  /** Holds whose `expiresAt` is before `now`, oldest first. */
  expiredHolds(now: Date, limit: number): Promise<Hold[]>;
  credit(input: NewCredit): Promise<CreditRecord>;
  balance(accountId: string): Promise<AccountBalance>;
  listCredits(accountId: string, limit?: number): Promise<CreditRecord[]>;
  ledgerTotals(): Promise<LedgerTotals[]>;
}
