/**
 * The model lists above a key, folded into it when it is authenticated: the operator's on its
 * account (they bind every key the account has or makes, a playground key or one made tomorrow
 * included) and, for a member's key in an organisation, what the organisation lets that member use.
 * The models all of them allow are the key's; the model rule then reads the bound key as any key.
 *
 * Rate limits are not folded: a limit above the key is one bucket shared by all the keys under it
 * (src/rate-limit/levels.ts), which per-key copies would multiply by the number of keys. Money
 * limits are not folded either: the account's own budget already binds all its keys, and a member's
 * budget is checked with the hold.
 */
import type { ApiKeyRecord, KeyIdentity } from '../store/store';
import { tighterModels } from './key-limits';

/** Which level a limit was set at, for a refusal that says who refused. */
export type LimitLevel = 'account' | 'member' | 'key';

const BOUND = new WeakMap<KeyIdentity, ApiKeyRecord>();

/**
 * The key with the model lists above it folded in; the key itself when there are none. One record
 * per identity (the key cache hands out the same identity until the key changes), so what is
 * compiled for a key record (its networks) is compiled once.
 */
export function boundKey(identity: KeyIdentity): ApiKeyRecord {
  const { accountLimits, memberLimits, key } = identity;
  if (accountLimits?.models === undefined && (memberLimits?.models ?? null) === null) return key;
  let bound = BOUND.get(identity);
  if (bound === undefined) {
    bound = { ...key, models: tighterModels(tighterModels(key.models, memberLimits?.models), accountLimits?.models) };
    BOUND.set(identity, bound);
  }
  return bound;
}

/** Whether a level above the key limits it at all: then the request carries the identity, for its rate buckets and refusals. */
export function limitedAbove({ accountLimits, memberLimits }: KeyIdentity): boolean {
  return accountLimits !== undefined || memberLimits !== undefined;
}

/** The first level, from the top, whose model list leaves `model` out; null when every level allows it. */
export function modelRefusedBy(identity: Pick<KeyIdentity, 'accountLimits' | 'memberLimits'>, ownModels: readonly string[] | null, model: string): LimitLevel | null {
  if (identity.accountLimits?.models !== undefined && !identity.accountLimits.models.includes(model)) return 'account';
  const member = identity.memberLimits?.models;
  if (member != null && !member.includes(model)) return 'member';
  if (ownModels !== null && !ownModels.includes(model)) return 'key';
  return null;
}
