/**
 * The persistence boundary. The embedded SQLite store implements it today; PostgreSQL implements the
 * same interface so the rest of Tollgate never knows which one it talks to.
 */

export type AccountRole = 'admin' | 'user';

export interface Account {
  readonly id: string;
  readonly name: string;
  readonly role: AccountRole;
  readonly disabled: boolean;
  readonly createdAt: Date;
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
  /** The first characters of the key (`sk-AbCd`), safe to show. */
  readonly prefix: string;
  /** The last four characters of the key, safe to show. */
  readonly last4: string;
  readonly createdAt: Date;
  readonly revokedAt: Date | null;
  readonly expiresAt: Date | null;
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
}

/** Thrown by `createAccount` when the name is taken; every store implementation throws this one. */
export class AccountExistsError extends Error {
  override readonly name = 'AccountExistsError';
  constructor(readonly accountName: string) {
    super(`an account named "${accountName}" already exists`);
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
}

export type HoldResult =
  | { readonly ok: true }
  /** `available` is what could have been held: the balance (or key limit) minus what is held already. */
  | { readonly ok: false; readonly reason: 'balance' | 'key_spend_limit'; readonly available: bigint };

/** Where a charge's token counts came from (`none`: nothing was produced, nothing is owed). */
export type UsageSourceRecord = 'upstream' | 'estimated' | 'partial' | 'none';

/** One request's entry in the ledger: recorded exactly once per request id, whatever it cost. */
export interface ChargeRecord {
  readonly requestId: string;
  readonly accountId: string;
  readonly keyId: string;
  readonly model: string;
  readonly provider: string | null;
  readonly endpoint: string;
  readonly inputTokens: number;
  readonly cacheWriteTokens: number;
  readonly cacheReadTokens: number;
  readonly outputTokens: number;
  /** Nano-units; 0 for failed requests and free models. */
  readonly cost: bigint;
  readonly usageSource: UsageSourceRecord;
  /** HTTP status the client got (499: it left first). */
  readonly status: number;
  readonly outcome: 'delivered' | 'aborted' | 'failed';
  readonly latencyMs: number;
  readonly createdAt: Date;
}

export type CreditKind = 'topup' | 'redemption' | 'admin';

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
  readonly since?: Date;
  readonly until?: Date;
  /** Newest first; at most this many (default 100). */
  readonly limit?: number;
}

export interface KeySpend {
  readonly spendLimit: bigint | null;
  readonly spent: bigint;
}

export interface Store {
  /**
   * Whether several gateway instances may share this store (PostgreSQL). An embedded store serves one
   * instance, so its live holds can be kept in that process's memory.
   */
  readonly shared: boolean;

  /** Creates or upgrades the schema; safe to run at every start. */
  migrate(): Promise<void>;

  createAccount(input: { name: string; role: AccountRole }): Promise<Account>;
  findAccountByName(name: string): Promise<Account | null>;
  countAccounts(): Promise<number>;

  createKey(input: NewKey): Promise<ApiKeyRecord>;
  listKeys(filter?: { accountId?: string }): Promise<ApiKeyRecord[]>;
  /** Revokes a key; false when no such key exists. Revoking twice is not an error. */
  revokeKey(id: string): Promise<boolean>;
  findKeyByHash(hash: Buffer): Promise<KeyIdentity | null>;

  /**
   * A number that changes whenever keys or accounts may have changed, in this process or any other
   * sharing the store. Synchronous and cheap: the auth cache compares it on every request.
   */
  keysRevision(): number;

  findAccountById(id: string): Promise<Account | null>;
  /** A key's spend limit and settled spend; null when no such key exists. */
  keySpend(keyId: string): Promise<KeySpend | null>;
  /** Sets a key's spend limit and model allow-list (null clears each). */
  setKeyLimits(id: string, limits: { spendLimit: bigint | null; models: readonly string[] | null }): Promise<boolean>;

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
  /** Removes holds without charging (the sweeper's release of holds whose instance died). */
  releaseHolds(requestIds: readonly string[]): Promise<number>;
  /** Holds whose `expiresAt` is before `now`, oldest first. */
  expiredHolds(now: Date, limit: number): Promise<Hold[]>;
  credit(input: NewCredit): Promise<CreditRecord>;
  balance(accountId: string): Promise<AccountBalance>;
  listCharges(filter: ChargeFilter): Promise<ChargeRecord[]>;
  listCredits(accountId: string, limit?: number): Promise<CreditRecord[]>;
  ledgerTotals(): Promise<LedgerTotals[]>;

  /** Stores new redemption codes by the SHA-256 of their text (the text itself is shown once). */
  createRedemptionCodes(input: { hashes: readonly Buffer[]; amount: bigint; createdBy: string | null; expiresAt: Date | null }): Promise<RedemptionCodeRecord[]>;
  /** Redeems a code once, whoever races for it: one credit, later attempts `used`. */
  redeemCode(hash: Buffer, accountId: string, actor: string | null): Promise<RedeemResult>;
  listRedemptionCodes(limit?: number): Promise<RedemptionCodeRecord[]>;

  /** Whether the store answers; for readiness. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
