import type { AuditFilter, AuditRecord, NewAuditEntry } from './audit';
import type { CreditKind, PaymentStore } from './payments';
import type { RefusalStore } from './refusals';
import type { RelayedResponseStore } from './relayed-responses';

/**
 * The persistence boundary. The embedded SQLite store implements it today; PostgreSQL implements the
 * same interface so the rest of Tollgate never knows which one it talks to.
 */
import type { TokenCounts, TokenKind, ToolCalls } from '../protocols/types';
import type { Admission } from '../money/admission';

export type AccountRole = 'admin' | 'user';

export interface Account {
  readonly id: string;
  readonly name: string;
  /** Lower-cased; an account logs in to the console by name or by e-mail. */
  readonly email: string | null;
  readonly role: AccountRole;
  readonly disabled: boolean;
  readonly createdAt: Date;
  /** Most the account may spend per period; null: the operator's default for its role, if any. */
  readonly budget: Budget | null;
  /** Most one agent session of the account may spend, in nano-units; null for no cap. */
  readonly sessionBudget: bigint | null;
}

export type BudgetPeriod = 'day' | 'week' | 'month';

/** Most that may be spent per calendar period in a time zone; nothing resets it, a new period starts empty. */
export interface Budget {
  /** Nano-units, > 0. */
  readonly amount: bigint;
  readonly period: BudgetPeriod;
  /** IANA name (`Europe/Berlin`, `UTC`); weeks start on Monday there. */
  readonly timezone: string;
}

/** An alert as fired: `once` names what it is about, so racing instances record it once. */
export interface NewAlert {
  /** The event id receivers deduplicate by. */
  readonly id: string;
  readonly once: string;
  readonly accountId: string;
  readonly keyId: string | null;
  readonly kind: 'budget' | 'balance';
  /** The webhook's JSON body, as delivered. */
  readonly body: string;
  readonly createdAt: Date;
}

export interface AlertRecord extends NewAlert {
  readonly deliveredAt: Date | null;
  /** Delivery attempts made so far. */
  readonly attempts: number;
}

/** What a budget applies to: a key's spend, or an account's (every key of it). */
export type BudgetScope = 'key' | 'account';

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
  readonly scope: BudgetScope;
  readonly id: string;
  readonly sessionId: string;
  readonly amount: bigint;
}

export interface ApiKeyRecord {
  readonly id: string;
  readonly accountId: string;
  readonly name: string | null;
  /** Most this key may spend in total, in nano-units; null for no limit beyond the balance. */
  readonly spendLimit: bigint | null;
  /** What the key has spent so far, in nano-units (settled charges only). */
  readonly spent: bigint;
  /** Models the key may use; null for every model. */
  readonly models: readonly string[] | null;
  /** Limits the key's owner set on it; each applies on top of the operator's (the lower wins). */
  readonly rateLimits: KeyRateLimits | null;
  /** Most the key may spend per period; null for none. */
  readonly budget: Budget | null;
  /** Most one agent session may spend through the key, in nano-units; null for no cap. */
  readonly sessionBudget: bigint | null;
  /** CIDRs the key's owner allows requests from; null for anywhere. The operator's list applies too. */
  readonly allowedNetworks: readonly string[] | null;
  /**
   * What an operator (an administrator, the CLI) set on the key, kept apart so the owner can tighten
   * it but never loosen or clear it: `spendLimit`, `models`, `rateLimits` and `budget` above already
   * include it (they are what is enforced); its `allowedNetworks` apply beside the owner's.
   */
  readonly operatorLimits: OperatorLimits | null;
  /** The first characters of the key (`sk-AbCd`), safe to show. */
  readonly prefix: string;
  /** The last four characters of the key, safe to show. */
  readonly last4: string;
  readonly createdAt: Date;
  readonly revokedAt: Date | null;
  readonly expiresAt: Date | null;
}

/** The limits an operator set on a key; an absent field sets none. */
export interface OperatorLimits {
  readonly spendLimit?: bigint;
  readonly models?: readonly string[];
  readonly rateLimits?: KeyRateLimits;
  readonly allowedNetworks?: readonly string[];
  readonly budget?: Budget;
  readonly sessionBudget?: bigint;
}

/** Per-key rate limits an account holder sets in the console; an absent field sets no limit. */
export interface KeyRateLimits {
  readonly rpm?: number;
  readonly tpm?: number;
  readonly concurrency?: number;
}

/** What authentication needs about a key, in one lookup. */
export interface KeyIdentity {
  readonly key: ApiKeyRecord;
  readonly account: Account;
  /** SHA-256 of the full key, as stored. */
  readonly hash: Buffer;
}

export interface NewKey {
  readonly accountId: string;
  readonly name: string | null;
  readonly hash: Buffer;
  readonly prefix: string;
  readonly last4: string;
  readonly expiresAt?: Date | null;
  readonly spendLimit?: bigint | null;
  readonly models?: readonly string[] | null;
  readonly rateLimits?: KeyRateLimits | null;
  readonly budget?: Budget | null;
  readonly sessionBudget?: bigint | null;
  readonly allowedNetworks?: readonly string[] | null;
  readonly operatorLimits?: OperatorLimits | null;
}

/** What a key's owner may change after creating it; an absent field is left as it is, null clears it. */
export interface KeyLimits {
  readonly spendLimit?: bigint | null;
  readonly models?: readonly string[] | null;
  readonly rateLimits?: KeyRateLimits | null;
  readonly budget?: Budget | null;
  readonly sessionBudget?: bigint | null;
  readonly allowedNetworks?: readonly string[] | null;
  readonly operatorLimits?: OperatorLimits | null;
}

/** An account with its stored balance, for the operator's list. */
export interface AccountSummary extends Account {
  readonly balance: bigint;
  readonly held: bigint;
}

/** An account as the console's login finds it: with its password hash (null: it cannot log in). */
export interface AccountLogin {
  readonly account: Account;
  readonly passwordHash: string | null;
}

/**
 * `session`: a console login, carried by an HttpOnly cookie. `token`: a management token for scripts
 * (`Authorization: Bearer tgm_…`). Both reach only `/api`; neither is an API key.
 */
export type SessionKind = 'session' | 'token';

export interface NewSession {
  readonly accountId: string;
  /** SHA-256 of the secret; the secret itself is never stored. */
  readonly hash: Buffer;
  readonly kind: SessionKind;
  readonly name: string | null;
  /** Null: never expires (only tokens made before tokens expired, and tests). */
  readonly expiresAt: Date | null;
  /** The browser or client that signed in (its User-Agent, cut short), shown on the Account page. */
  readonly userAgent?: string | null;
}

export interface SessionRecord {
  readonly id: string;
  readonly accountId: string;
  readonly kind: SessionKind;
  readonly name: string | null;
  readonly createdAt: Date;
  readonly expiresAt: Date | null;
  /** When it was last used, to the minute; null before its first use. */
  readonly lastUsedAt: Date | null;
  readonly userAgent: string | null;
}

/** An account's TOTP enrolment: the shared secret, and whether a first code confirmed it. */
export interface SecondFactor {
  /** Base32, as the authenticator app was given it. */
  readonly secret: string;
  readonly confirmedAt: Date | null;
  /** The last 30-second time step whose code was accepted; a code of it or earlier is refused. */
  readonly lastStep: number | null;
}

/** One UTC day of an account's (or everyone's) charges. */
export interface DailyUsage {
  /** `YYYY-MM-DD`, UTC. */
  readonly day: string;
  readonly requests: number;
  readonly cost: bigint;
}

/** Thrown by `createAccount` when the name is taken; every store implementation throws this one. */
export class AccountExistsError extends Error {
  override readonly name = 'AccountExistsError';
  constructor(
    /** The name, or the e-mail when `field` is 'email'. */
    readonly accountName: string,
    readonly field: 'name' | 'email' = 'name',
  ) {
    super(field === 'name' ? `an account named "${accountName}" already exists` : `an account with the e-mail "${accountName}" already exists`);
  }
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

export type { CreditKind } from './payments';

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

export interface RedemptionCodeRecord {
  readonly id: string;
  readonly amount: bigint;
  readonly createdAt: Date;
  readonly createdBy: string | null;
  readonly expiresAt: Date | null;
  readonly redeemedBy: string | null;
  readonly redeemedAt: Date | null;
}

export type RedeemResult =
  | { readonly ok: true; readonly credit: CreditRecord }
  | { readonly ok: false; readonly reason: 'unknown' | 'used' | 'expired' };

export interface ChargeFilter {
  readonly accountId?: string;
  readonly keyId?: string;
  readonly model?: string;
  readonly sessionId?: string;
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
export type UsageGroup = (typeof USAGE_GROUPS)[number];

export interface UsageSummaryQuery {
  /** Null: every account (an operator's question). */
  readonly accountId: string | null;
  readonly groupBy: UsageGroup;
  /** Only this session's charges. */
  readonly sessionId?: string;
  /**
   * By session, leave out the charges made outside any session: a list of sessions wants them not,
   * a summary does (its rows then add up to what was charged, the sessionless ones in a null row).
   */
  readonly namedSessionsOnly?: boolean;
  readonly since: Date;
  /** Exclusive. */
  readonly until: Date;
  readonly limit: number;
  readonly offset: number;
}

/** One group of a usage summary: its requests, errors (status 400 or above), cost and tokens. */
export interface UsageSummaryRow extends TokenCounts {
  /** The model, key id, `YYYY-MM-DD` day, session id, account id or provider; null for charges without one (no provider, no session). */
  readonly group: string | null;
  readonly requests: number;
  readonly errors: number;
  readonly cost: bigint;
  readonly firstAt: Date;
  readonly lastAt: Date;
  /** The models used, sorted; only when grouped by session, else null. */
  readonly models: readonly string[] | null;
}

/** A key's recent activity, for the Tokens page. */
export interface KeyActivity {
  readonly keyId: string;
  readonly lastUsedAt: Date | null;
  /** Spent since the start of the current UTC day, and of the current UTC month. */
  readonly spentToday: bigint;
  readonly spentMonth: bigint;
}

export interface KeySpend {
  readonly spendLimit: bigint | null;
  readonly spent: bigint;
}

/**
 * How fresh a revision must be. `now` (the default): exact at the moment of the call. `turn`: as read
 * once in the current event-loop turn, which is what the request path asks, so a busy turn asks the
 * database once for all its requests: a change committed by another process is then seen from the next
 * turn, this process's own changes at once. Stores whose revision costs nothing to read ignore it.
 */
export type RevisionFreshness = 'now' | 'turn';

export interface Store {
  /**
   * Whether several gateway instances may share this store (PostgreSQL). An embedded store serves one
   * instance, so its live holds can be kept in that process's memory.
   */
  readonly shared: boolean;
  /**
   * False when what it records dies with the process (an in-memory SQLite database): an outbox in
   * front of it would replay charges into a ledger that no longer exists. Absent: it survives.
   */
  readonly durable?: boolean;

  /**
   * Creates or upgrades the schema, and seals TOTP secrets an older version stored in plaintext; safe
   * to run at every start. Throws SecretKeyError when the secret key is malformed, or missing where
   * it must be given (auth/secret-key.ts).
   */
  migrate(): Promise<void>;
  /**
   * Throws SecretKeyError, naming the accounts and the way out, when a TOTP secret the store holds
   * does not open with its key (it was sealed with another). `serve` checks before it listens; the
   * CLI does not, so `tollgate account reset-2fa` still works when the key is lost.
   */
  verifySecretKey(): Promise<void>;

  /** Throws AccountExistsError when the name (or the e-mail) is taken. */
  createAccount(input: { name: string; role: AccountRole; email?: string | null; passwordHash?: string | null }): Promise<Account>;
  findAccountByName(name: string): Promise<Account | null>;
  countAccounts(): Promise<number>;
  /** Every account with its stored balance, oldest first. */
  listAccounts(): Promise<AccountSummary[]>;
  /** The account whose name or e-mail is `login`, whatever its case, with its password hash. */
  findLogin(login: string): Promise<AccountLogin | null>;
  setPassword(accountId: string, passwordHash: string): Promise<boolean>;
  /** Disables or re-enables an account: a disabled account's keys and sessions stop working. */
  setAccountDisabled(accountId: string, disabled: boolean): Promise<boolean>;

  createKey(input: NewKey): Promise<ApiKeyRecord>;
  listKeys(filter?: { accountId?: string }): Promise<ApiKeyRecord[]>;
  /** Revokes a key; false when no such key exists. Revoking twice is not an error. */
  revokeKey(id: string): Promise<boolean>;
  findKeyByHash(hash: Buffer): Promise<KeyIdentity | null>;

  /**
   * A number that changes whenever keys or accounts may have changed, in this process or any other
   * sharing the store. Synchronous and cheap: the auth cache compares it on every request.
   */
  keysRevision(asOf?: RevisionFreshness): number;
  /**
   * Only in a store that is not shared (the embedded one): a number that changes whenever a stored
   * balance may have moved other than by this process's own charges (recordCharges): a credit, a
   * redemption, any other connection's commit (the CLI). The in-process balance book keeps a balance
   * it read while this stays put; without it, the book reads the balance at every hold.
   */
  fundsRevision?(asOf?: RevisionFreshness): number;

  findAccountById(id: string): Promise<Account | null>;
  /** A key's spend limit and settled spend; null when no such key exists. */
  keySpend(keyId: string): Promise<KeySpend | null>;
  /** Changes a key's limits: the fields given are set (null clears one), the others are kept. */
  setKeyLimits(id: string, limits: KeyLimits): Promise<boolean>;
  /** Sets an account's own budget (null: none of its own); false when no such account exists. */
  setAccountBudget(accountId: string, budget: Budget | null): Promise<boolean>;
  /** Sets an account's session budget in nano-units (null: none); false when no such account exists. */
  setAccountSessionBudget(accountId: string, amount: bigint | null): Promise<boolean>;
  /** Records an alert unless one with the same `once` exists; true when this call recorded it. */
  recordAlert(alert: NewAlert): Promise<boolean>;
  /** Alerts, newest first: of one account, or every account's; only those not delivered yet when asked. */
  listAlerts(filter: { accountId?: string; undelivered?: boolean; limit?: number }): Promise<AlertRecord[]>;
  /** Counts one delivery attempt of an alert, and marks it delivered when it was. */
  alertAttempted(id: string, delivered: boolean, at: Date): Promise<void>;
  /** What the ledger charged a key or an account (all its keys) from `since` until before `until`, in nano-units. */
  periodSpend(scope: BudgetScope, id: string, since: Date, until: Date): Promise<bigint>;
  /** What the ledger charged a key or an account (all its keys) in the client's session `sessionId`, ever. */
  sessionSpend(scope: BudgetScope, id: string, sessionId: string): Promise<bigint>;

  // Console sessions and management tokens, looked up by the SHA-256 of their secret.
  createSession(input: NewSession): Promise<SessionRecord>;
  /** The session and its account; null when unknown or expired at `now`. */
  findSession(hash: Buffer, now: Date): Promise<{ session: SessionRecord; account: Account } | null>;
  /** Ends one session or token of an account (logout, token revocation); false when not found. */
  deleteSession(id: string, accountId: string): Promise<boolean>;
  /** An account's sessions or tokens, newest first. */
  listSessions(accountId: string, kind: SessionKind): Promise<SessionRecord[]>;
  /** Removes sessions that expired before `now`; returns how many. */
  deleteExpiredSessions(now: Date): Promise<number>;
  /**
   * Ends every session and token of an account but `except` (the caller's own, when it stays signed
   * in); returns how many ended. The management API reads sessions from the store at every request,
   * so this takes effect at once on every instance sharing it.
   */
  endSessions(accountId: string, except?: string | null): Promise<number>;
  /** Records that a session or token was used at `at`. */
  touchSession(id: string, at: Date): Promise<void>;

  // Two-factor sign-in (TOTP) and its one-time recovery codes, by the SHA-256 of their text.
  getSecondFactor(accountId: string): Promise<SecondFactor | null>;
  /** Starts an enrolment with `secret` (unconfirmed), replacing any earlier one and its recovery codes. */
  beginSecondFactor(accountId: string, secret: string): Promise<void>;
  /** Confirms the enrolment with the step of its first code and stores the recovery codes' hashes. */
  confirmSecondFactor(accountId: string, step: number, recoveryHashes: readonly Buffer[]): Promise<boolean>;
  /** Removes the second factor and its recovery codes; false when there was none. */
  removeSecondFactor(accountId: string): Promise<boolean>;
  /** Accepts a code's time step once: false when it, or a later one, was accepted already. */
  useTotpStep(accountId: string, step: number): Promise<boolean>;
  /** Spends a recovery code: false when unknown or already spent. */
  useRecoveryCode(accountId: string, hash: Buffer, at: Date): Promise<boolean>;
  /** Recovery codes the account has not spent. */
  recoveryCodesLeft(accountId: string): Promise<number>;

  // The ledger. Balance = credits − charges, kept in the account row by the same transaction that
  // appends to the ledger, so it can be checked against the ledger at any time (`ledgerTotals`).

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
  listCredits(accountId: string, limit?: number): Promise<CreditRecord[]>;
  ledgerTotals(): Promise<LedgerTotals[]>;

  /** Stores new redemption codes by the SHA-256 of their text (the text itself is shown once). */
  createRedemptionCodes(input: { hashes: readonly Buffer[]; amount: bigint; createdBy: string | null; expiresAt: Date | null }): Promise<RedemptionCodeRecord[]>;
  /** Redeems a code once, whoever races for it: one credit, later attempts `used`. */
  redeemCode(hash: Buffer, accountId: string, actor: string | null): Promise<RedeemResult>;
  listRedemptionCodes(limit?: number): Promise<RedemptionCodeRecord[]>;

  /** Card payments: orders, debits, Stripe events, payment profiles (payments.ts). */
  readonly payments: PaymentStore;

  /** Refused requests, beside the ledger (refusals.ts). */
  readonly refusals: RefusalStore;

  /** Response and conversation ids relayed to each account from native Responses routes (relayed-responses.ts). */
  readonly relayedResponses: RelayedResponseStore;

  /** Appends one entry to the audit log (store/audit.ts); never anything secret. */
  appendAudit(entry: NewAuditEntry): Promise<AuditRecord>;
  /** Audit entries matching `filter`, newest first. */
  listAudit(filter: AuditFilter): Promise<AuditRecord[]>;

  /** Whether the store answers; for readiness. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
