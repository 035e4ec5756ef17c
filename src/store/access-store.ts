/**
 * Who may come in: accounts (and the console's logins), API keys and their limits, console sessions
 * and management tokens, and the second factor. One half of `Store` (store.ts composes them).
 */

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
  /**
   * The member who made the key inside an organisation (the key's account): its charges record them,
   * and the organisation's limits for them apply. Null for an account's own key; absent on records
   * made before organisations.
   */
  readonly memberAccountId?: string | null;
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
  /** What an operator set on the key's account: it binds every key the account has or makes. Absent: nothing. */
  readonly accountLimits?: OperatorLimits;
  /**
   * What the organisation lets the key's member use and spend through all of their keys in it. Absent:
   * nothing. The budget is checked with the hold (src/billing/budgets.ts), the rest folded into the key.
   */
  readonly memberLimits?: { readonly models: readonly string[] | null; readonly rateLimits: KeyRateLimits | null; readonly budget?: Budget | null };
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
  /** The member making the key inside the organisation `accountId`; absent or null: the account's own key. */
  readonly memberAccountId?: string | null;
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
 * How fresh a revision must be. `now` (the default): exact at the moment of the call. `turn`: as read
 * once in the current event-loop turn, which is what the request path asks, so a busy turn asks the
 * database once for all its requests: a change committed by another process is then seen from the next
 * turn, this process's own changes at once. Stores whose revision costs nothing to read ignore it.
 */
export type RevisionFreshness = 'now' | 'turn';

export interface AccessStore {
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

  findAccountById(id: string): Promise<Account | null>;
  /** Changes a key's limits: the fields given are set (null clears one), the others are kept. */
  setKeyLimits(id: string, limits: KeyLimits): Promise<boolean>;
  /** Sets an account's own budget (null: none of its own); false when no such account exists. */
  setAccountBudget(accountId: string, budget: Budget | null): Promise<boolean>;
  /** Sets the operator's limits on an account, binding every key it has or makes (null: none); false when no such account. */
  setAccountOperatorLimits(accountId: string, limits: OperatorLimits | null): Promise<boolean>;
  /** The operator's limits on an account; null when none (or no such account). */
  accountOperatorLimits(accountId: string): Promise<OperatorLimits | null>;
  /** Sets an account's session budget in nano-units (null: none); false when no such account exists. */
  setAccountSessionBudget(accountId: string, amount: bigint | null): Promise<boolean>;

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
}
