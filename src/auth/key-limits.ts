/**
 * A key's limits come from two hands: its owner's and an operator's (an administrator, the CLI). The
 * key's own columns hold what is enforced: for each limit, the tighter of the two. The operator's
 * are kept apart (`operatorLimits`), so the owner's change can only tighten them, and the owner's
 * own choice can be told from the operator's on the console. Allowed networks are the exception:
 * both lists are kept and a request must match each, since two lists of networks have no "tighter".
 */
import type { ApiKeyRecord, KeyLimits, KeyRateLimits, OperatorLimits } from '../store/store';

const RATE_FIELDS = ['rpm', 'tpm', 'concurrency'] as const;

function tighterSpend(a: bigint | null | undefined, b: bigint | null | undefined): bigint | null {
  if (a == null) return b ?? null;
  if (b == null) return a;
  return a < b ? a : b;
}

/** Models both allow (null: every model). An empty intersection stays empty: the key can call nothing. */
function tighterModels(a: readonly string[] | null | undefined, b: readonly string[] | null | undefined): readonly string[] | null {
  if (a == null) return b ?? null;
  if (b == null) return a;
  return a.filter((model) => b.includes(model));
}

function tighterRates(a: KeyRateLimits | null | undefined, b: KeyRateLimits | null | undefined): KeyRateLimits | null {
  const limits: { rpm?: number; tpm?: number; concurrency?: number } = {};
  for (const field of RATE_FIELDS) {
    const values = [a?.[field], b?.[field]].filter((value): value is number => value !== undefined);
    if (values.length > 0) limits[field] = Math.min(...values);
  }
  return Object.keys(limits).length === 0 ? null : limits;
}

/**
 * The owner's change, made no looser than the operator's limits: a limit the owner clears or raises
 * falls back to the operator's. Fields the owner did not send stay out (unchanged).
 */
export function ownerChange(requested: KeyLimits, operator: OperatorLimits | null): KeyLimits {
  return {
    ...(requested.spendLimit === undefined ? {} : { spendLimit: tighterSpend(requested.spendLimit, operator?.spendLimit) }),
    ...(requested.models === undefined ? {} : { models: tighterModels(requested.models, operator?.models) }),
    ...(requested.rateLimits === undefined ? {} : { rateLimits: tighterRates(requested.rateLimits, operator?.rateLimits) }),
    ...(requested.allowedNetworks === undefined ? {} : { allowedNetworks: requested.allowedNetworks }),
  };
}

/**
 * What the owner set on their own: each enforced limit that is tighter than the operator's (or where
 * the operator set none). A limit equal to the operator's is the operator's.
 */
function ownersOwn(key: Pick<ApiKeyRecord, 'spendLimit' | 'models' | 'rateLimits' | 'operatorLimits'>): KeyLimits {
  const operator = key.operatorLimits;
  const spendLimit = key.spendLimit !== null && (operator?.spendLimit === undefined || key.spendLimit < operator.spendLimit) ? key.spendLimit : null;
  const models =
    key.models !== null && (operator?.models === undefined || key.models.length !== operator.models.length || key.models.some((model) => !operator.models!.includes(model)))
      ? key.models
      : null;
  const own: { rpm?: number; tpm?: number; concurrency?: number } = {};
  for (const field of RATE_FIELDS) {
    const value = key.rateLimits?.[field];
    const theirs = operator?.rateLimits?.[field];
    if (value !== undefined && (theirs === undefined || value < theirs)) own[field] = value;
  }
  return { spendLimit, models, rateLimits: Object.keys(own).length === 0 ? null : own };
}

/**
 * The operator's new limits on a key: stored apart, and the enforced limits recomputed as the
 * tighter of the owner's own and the operator's new ones (an operator loosening their limit gives
 * the owner's own choice back).
 */
export function operatorChange(key: Pick<ApiKeyRecord, 'spendLimit' | 'models' | 'rateLimits' | 'operatorLimits'>, operator: OperatorLimits | null): KeyLimits {
  const own = ownersOwn(key);
  return {
    operatorLimits: operator,
    spendLimit: tighterSpend(own.spendLimit, operator?.spendLimit),
    models: tighterModels(own.models, operator?.models),
    rateLimits: tighterRates(own.rateLimits, operator?.rateLimits),
  };
}
