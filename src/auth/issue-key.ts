/**
 * Issuing and judging keys against the store: the one place a new key is generated and saved (CLI,
 * first run, console later), and the one rule for whether a stored key still works.
 */
import type { AccessStore, ApiKeyRecord, Budget, KeyRateLimits, OperatorLimits } from '../store/access-store';
import { generateApiKey } from './keys';

export interface IssuedKey {
  /** The plaintext key: returned this once, never stored. */
  readonly key: string;
  readonly record: ApiKeyRecord;
}

/** Generates a key for an account and stores its hash and display parts. */
export async function issueApiKey(
  store: AccessStore,
  input: {
    accountId: string;
    name: string | null;
    expiresAt?: Date | null;
    spendLimit?: bigint | null;
    models?: readonly string[] | null;
    rateLimits?: KeyRateLimits | null;
    budget?: Budget | null;
    allowedNetworks?: readonly string[] | null;
    operatorLimits?: OperatorLimits | null;
    /** The member making the key inside the organisation `accountId`. */
    memberAccountId?: string | null;
  },
): Promise<IssuedKey> {
  const generated = generateApiKey();
  const record = await store.createKey({
    accountId: input.accountId,
    name: input.name,
    hash: generated.hash,
    prefix: generated.prefix,
    last4: generated.last4,
    expiresAt: input.expiresAt ?? null,
    spendLimit: input.spendLimit ?? null,
    models: input.models ?? null,
    rateLimits: input.rateLimits ?? null,
    budget: input.budget ?? null,
    allowedNetworks: input.allowedNetworks ?? null,
    operatorLimits: input.operatorLimits ?? null,
    ...(input.memberAccountId == null ? {} : { memberAccountId: input.memberAccountId }),
  });
  return { key: generated.key, record };
}

/** Whether a key still works. Revocation wins over expiry. */
export type KeyStatus = 'active' | 'revoked' | 'expired';

/** The status of `key` at `now` (ms since the epoch). */
export function keyStatus(key: ApiKeyRecord, now: number): KeyStatus {
  if (key.revokedAt !== null) return 'revoked';
  if (key.expiresAt !== null && key.expiresAt.getTime() <= now) return 'expired';
  return 'active';
}
