/**
 * The TOTP shared secrets of `second_factors`, sealed at rest under the store's secret key
 * (auth/secret-key.ts, auth/sealed-secret.ts) for the account they belong to. Both stores write
 * only sealed values and read only sealed values; a plaintext secret from before this version is
 * sealed in place when the store is migrated, and a secret that does not open (another key) stops
 * the gateway at start with the way out.
 */
import { isSealed, seal, unseal } from '../auth/sealed-secret';
import { SECRET_KEY_VARIABLE, SecretKeyError, type SecretKey } from '../auth/secret-key';

/** A row's secret as stored, with whose it is. */
export interface StoredFactor {
  readonly account_id: string;
  readonly name: string;
  readonly secret: string;
}

/** The associated data: a value sealed for one account, or for another purpose, opens nowhere else. */
function contextOf(accountId: string): string {
  return `totp:${accountId}`;
}

export function sealFactorSecret(key: SecretKey, accountId: string, secret: string): string {
  return seal(key.key, secret, contextOf(accountId));
}

/** The secret of a row as the store read it; throws when it is not sealed, or not with this key. */
export function openFactorSecret(key: SecretKey, accountId: string, stored: string): string {
  const secret = unseal(key.key, stored, contextOf(accountId));
  if (secret !== null) return secret;
  throw new Error(
    isSealed(stored)
      ? `the TOTP secret of account ${accountId} does not open with ${key.source}: it was sealed with another key`
      : `the TOTP secret of account ${accountId} is not sealed; the store's migration seals every secret, so this row was written by hand or by an older version since`,
  );
}

/** The rows a migration must seal: those still holding a plaintext (base32) secret. */
export function plaintextFactors<Row extends Pick<StoredFactor, 'secret'>>(rows: readonly Row[]): Row[] {
  return rows.filter((row) => !isSealed(row.secret));
}

/** Throws, naming the accounts and the way out, when any of `rows` does not open with `key`. */
export function requireOpenable(key: SecretKey, rows: readonly StoredFactor[]): void {
  const closed = rows.filter((row) => unseal(key.key, row.secret, contextOf(row.account_id)) === null).map((row) => row.name);
  if (closed.length === 0) return;
  throw new SecretKeyError(
    `the TOTP secrets of ${closed.length} account(s) (${closed.join(', ')}) do not open with ${key.source}: it is not the key they were sealed with. ` +
      `Start again with that key (${SECRET_KEY_VARIABLE}, or the key file beside an SQLite database); if it is lost, so are those second factors: ` +
      `"tollgate account reset-2fa NAME" removes one, and its owner enrols again`,
  );
}
