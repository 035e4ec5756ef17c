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
}

/** Thrown by `createAccount` when the name is taken; every store implementation throws this one. */
export class AccountExistsError extends Error {
  override readonly name = 'AccountExistsError';
  constructor(readonly accountName: string) {
    super(`an account named "${accountName}" already exists`);
  }
}

export interface Store {
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

  /** Whether the store answers; for readiness. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}
