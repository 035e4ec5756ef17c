/**
 * The limits above a key, folded into it when it is authenticated: the operator's limits on its
 * account (they bind every key the account has or makes, a playground key or one made tomorrow
 * included) and, for a member's key in an organisation, what the organisation lets that member use.
 * The tightest wins for each limit: models both allow, the lower rpm/tpm/concurrency; the rate
 * limiter and the model rule then read the bound key as they read any key.
 *
 * Money limits are not folded: the account's own budget already binds all its keys, and a member's
 * budget is checked with the hold.
 */
import type { ApiKeyRecord, KeyIdentity } from '../store/store';
import { tighterModels, tighterRates } from './key-limits';

/** Which level a limit was set at, for a refusal that says who refused. */
export type LimitLevel = 'account' | 'member' | 'key';

const BOUND = new WeakMap<KeyIdentity, ApiKeyRecord>();

/**
 * The key with the limits above it folded in; the key itself when there are none. One record per
 * identity (the key cache hands out the same identity until the key changes), so what is compiled
 * for a key record (its networks) is compiled once.
 */
export function boundKey(identity: KeyIdentity): ApiKeyRecord {
  const { accountLimits, memberLimits, key } = identity;
  if (accountLimits === undefined && memberLimits === undefined) return key;
  let bound = BOUND.get(identity);
  if (bound === undefined) {
    const models = tighterModels(tighterModels(key.models, memberLimits?.models), accountLimits?.models);
    const rateLimits = tighterRates(tighterRates(key.rateLimits, memberLimits?.rateLimits), accountLimits?.rateLimits);
    bound = { ...key, models, rateLimits };
    BOUND.set(identity, bound);
  }
  return bound;
}

/** The first level, from the top, whose model list leaves `model` out; null when every level allows it. */
export function modelRefusedBy(identity: Pick<KeyIdentity, 'accountLimits' | 'memberLimits'>, ownModels: readonly string[] | null, model: string): LimitLevel | null {
  if (identity.accountLimits?.models !== undefined && !identity.accountLimits.models.includes(model)) return 'account';
  const member = identity.memberLimits?.models;
  if (member != null && !member.includes(model)) return 'member';
  if (ownModels !== null && !ownModels.includes(model)) return 'key';
  return null;
}
