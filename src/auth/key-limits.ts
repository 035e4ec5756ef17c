/**
 * A key's limits come from two hands: its owner's and an operator's (an administrator, the CLI). The
 * key's own columns hold what is enforced: for each limit, the tighter of the two. The operator's
 * are kept apart (`operatorLimits`), so the owner's change can only tighten them, and the owner's
 * own choice can be told from the operator's on the console. Allowed networks are the exception:
 * both lists are kept and a request must match each, since two lists of networks have no "tighter".
 * Two budgets compare only over the same period and time zone: under an operator's budget, the
 * owner's may lower its amount, nothing else (`budgetProblem`).
 */
import { formatUnits } from '../billing/money';
import type { ApiKeyRecord, Budget, KeyLimits, KeyRateLimits, OperatorLimits } from '../store/store';

const RATE_FIELDS = ['rpm', 'tpm', 'concurrency'] as const;

type OwnerFields = Pick<ApiKeyRecord, 'spendLimit' | 'models' | 'rateLimits' | 'budget' | 'sessionBudget' | 'operatorLimits'>;

function tighterSpend(a: bigint | null | undefined, b: bigint | null | undefined): bigint | null {
  if (a == null) return b ?? null;
  if (b == null) return a;
  return a < b ? a : b;
}

function sameCalendar(a: Budget, b: Budget): boolean {
  return a.period === b.period && a.timezone === b.timezone;
}

/** The smaller of two budgets over the same calendar; an operator's over a different one wins. */
function tighterBudget(own: Budget | null | undefined, operator: Budget | undefined): Budget | null {
  if (operator === undefined) return own ?? null;
  if (own == null || !sameCalendar(own, operator)) return operator;
  return own.amount < operator.amount ? own : operator;
}

/**
 * Why an owner's budget cannot stand beside the operator's, or null when it can: a budget per another
 * period or time zone is neither tighter nor looser, so it is refused rather than silently replaced.
 */
export function budgetProblem(requested: Budget | null | undefined, operator: OperatorLimits | null): string | null {
  const theirs = operator?.budget;
  if (theirs === undefined || requested == null || sameCalendar(requested, theirs)) return null;
  return `The operator set this key's budget per ${theirs.period} (${theirs.timezone}); yours can lower its amount, with the same period and time zone.`;
}

/** A limit the owner asked for that the operator's is tighter than: the field and what to say. */
export interface LooserLimit {
  readonly field: 'spend_limit' | 'session_budget' | 'budget' | 'rate_limits' | 'models';
  readonly message: string;
}

function capped(what: string, yours: string, theirs: string): string {
  return `${what} is capped at the operator's ${theirs}: ${yours} would be looser. Set ${theirs} or less, or clear yours to use the operator's.`;
}

/**
 * The first value the owner asked for that is looser than the operator's, or null: said rather than
 * silently replaced by the operator's, so the owner knows what holds. Clearing a limit is not looser:
 * the operator's then applies on its own.
 */
export function looserLimit(requested: KeyLimits, operator: OperatorLimits | null): LooserLimit | null {
  if (operator === null) return null;
  const { spendLimit, sessionBudget, budget, rateLimits, models } = requested;
  if (spendLimit != null && operator.spendLimit !== undefined && spendLimit > operator.spendLimit) {
    return { field: 'spend_limit', message: capped('The spend limit', formatUnits(spendLimit), formatUnits(operator.spendLimit)) };
  }
  if (sessionBudget != null && operator.sessionBudget !== undefined && sessionBudget > operator.sessionBudget) {
    return { field: 'session_budget', message: capped('The session budget', formatUnits(sessionBudget), formatUnits(operator.sessionBudget)) };
  }
  const theirs = operator.budget;
  if (budget != null && theirs !== undefined && sameCalendar(budget, theirs) && budget.amount > theirs.amount) {
    return { field: 'budget', message: capped(`The budget per ${theirs.period}`, formatUnits(budget.amount), formatUnits(theirs.amount)) };
  }
  for (const field of RATE_FIELDS) {
    const yours = rateLimits?.[field];
    const limit = operator.rateLimits?.[field];
    if (yours !== undefined && limit !== undefined && yours > limit) return { field: 'rate_limits', message: capped(`The ${field} limit`, String(yours), String(limit)) };
  }
  const allowed = operator.models;
  const extra = models != null && allowed !== undefined ? models.filter((model) => !allowed.includes(model)) : [];
  if (extra.length > 0) {
    return { field: 'models', message: `The operator allows this key only ${allowed!.join(', ')}: ${extra.join(', ')} would be looser. Choose among those, or clear yours to use the operator's.` };
  }
  return null;
}

/** Models both allow (null: every model). An empty intersection stays empty: the key can call nothing. */
export function tighterModels(a: readonly string[] | null | undefined, b: readonly string[] | null | undefined): readonly string[] | null {
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
    ...(requested.budget === undefined ? {} : { budget: tighterBudget(requested.budget, operator?.budget) }),
    ...(requested.spendLimit === undefined ? {} : { spendLimit: tighterSpend(requested.spendLimit, operator?.spendLimit) }),
    ...(requested.sessionBudget === undefined ? {} : { sessionBudget: tighterSpend(requested.sessionBudget, operator?.sessionBudget) }),
    ...(requested.models === undefined ? {} : { models: tighterModels(requested.models, operator?.models) }),
    ...(requested.rateLimits === undefined ? {} : { rateLimits: tighterRates(requested.rateLimits, operator?.rateLimits) }),
    ...(requested.allowedNetworks === undefined ? {} : { allowedNetworks: requested.allowedNetworks }),
  };
}

/**
 * What the owner set on their own: each enforced limit that is tighter than the operator's (or where
 * the operator set none). A limit equal to the operator's is the operator's.
 */
function ownersOwn(key: OwnerFields): KeyLimits {
  const operator = key.operatorLimits;
  const theirs = operator?.budget;
  const budget = key.budget !== null && (theirs === undefined || !sameCalendar(key.budget, theirs) || key.budget.amount < theirs.amount) ? key.budget : null;
  const spendLimit = key.spendLimit !== null && (operator?.spendLimit === undefined || key.spendLimit < operator.spendLimit) ? key.spendLimit : null;
  const sessionBudget = key.sessionBudget !== null && (operator?.sessionBudget === undefined || key.sessionBudget < operator.sessionBudget) ? key.sessionBudget : null;
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
  return { spendLimit, models, rateLimits: Object.keys(own).length === 0 ? null : own, budget, sessionBudget };
}

/**
 * The operator's new limits on a key: stored apart, and the enforced limits recomputed as the
 * tighter of the owner's own and the operator's new ones (an operator loosening their limit gives
 * the owner's own choice back).
 */
export function operatorChange(key: OwnerFields, operator: OperatorLimits | null): KeyLimits {
  const own = ownersOwn(key);
  return {
    operatorLimits: operator,
    spendLimit: tighterSpend(own.spendLimit, operator?.spendLimit),
    models: tighterModels(own.models, operator?.models),
    rateLimits: tighterRates(own.rateLimits, operator?.rateLimits),
    budget: tighterBudget(own.budget, operator?.budget),
    sessionBudget: tighterSpend(own.sessionBudget, operator?.sessionBudget),
  };
}

/**
 * The operator's limits after a change: a field given replaces theirs (null removes it), a field left
 * out keeps it. Null when none is left.
 */
export function changedOperatorLimits(current: OperatorLimits | null, change: KeyLimits): OperatorLimits | null {
  const pick = <T>(changed: T | null | undefined, kept: T | undefined): T | undefined => (changed === undefined ? kept : (changed ?? undefined));
  const spendLimit = pick(change.spendLimit, current?.spendLimit);
  const models = pick(change.models, current?.models);
  const rateLimits = pick(change.rateLimits, current?.rateLimits);
  const allowedNetworks = pick(change.allowedNetworks, current?.allowedNetworks);
  const budget = pick(change.budget, current?.budget);
  const sessionBudget = pick(change.sessionBudget, current?.sessionBudget);
  const limits: OperatorLimits = {
    ...(spendLimit === undefined ? {} : { spendLimit }),
    ...(models === undefined ? {} : { models }),
    ...(rateLimits === undefined ? {} : { rateLimits }),
    ...(allowedNetworks === undefined ? {} : { allowedNetworks }),
    ...(budget === undefined ? {} : { budget }),
    ...(sessionBudget === undefined ? {} : { sessionBudget }),
  };
  return Object.keys(limits).length === 0 ? null : limits;
}
