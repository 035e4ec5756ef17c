/**
 * Which budgets a request is held against: its key's; for a member's key in an organisation, the
 * budget the organisation set for that member (every key they made in it); and its account's own or
 * else the operator's default for the account's role (`budgets.role_defaults`). Narrowest first, so a
 * request over several is told about the one nearest the key. Each is checked against the spend of
 * its current period, so a changed budget applies from the next request on.
 */
import type { GatewayConfig } from '../config/types';
import type { BudgetData } from '../config/schema-types';
import type { Account, AccountRole, ApiKeyRecord, Budget, BudgetCheck, BudgetScope, SessionBudgetCheck } from '../store/store';
import { memberBudgetId } from '../store/budget-owner';
import { PeriodCache } from './budget-period';
import { formatUnits, unitsToNano } from './money';

const defaultsByConfig = new WeakMap<GatewayConfig, ReadonlyMap<AccountRole, Budget>>();

/** A budget as gateway.yaml writes it (amount in units, timezone defaulted by the schema). */
function budgetFromConfig(data: BudgetData): Budget {
  return { amount: unitsToNano(data.amount), period: data.period, timezone: data.timezone };
}

function roleDefaults(config: GatewayConfig): ReadonlyMap<AccountRole, Budget> {
  let defaults = defaultsByConfig.get(config);
  if (defaults === undefined) {
    const entries = Object.entries(config.budgets.role_defaults).filter((entry): entry is [AccountRole, BudgetData] => entry[1] !== undefined);
    defaults = new Map(entries.map(([role, data]) => [role, budgetFromConfig(data)]));
    defaultsByConfig.set(config, defaults);
  }
  return defaults;
}

/** The account's budget: its own, else its role's default; null for none. */
export function accountBudget(config: GatewayConfig, account: Account): Budget | null {
  return account.budget ?? roleDefaults(config).get(account.role) ?? null;
}

/**
 * Each budget that applies to a request by `key` of `account`, in its period at `now`. `memberBudget`
 * is what the organisation set for the key's member (the key identity's `memberLimits.budget`).
 */
export function budgetChecks(config: GatewayConfig, account: Account, key: ApiKeyRecord, memberBudget: Budget | null | undefined, now: Date, periods: PeriodCache): BudgetCheck[] {
  const checks: BudgetCheck[] = [];
  if (key.budget !== null) checks.push(checkOf('key', key.id, key.budget, now, periods));
  if (memberBudget != null && key.memberAccountId != null) checks.push(checkOf('member', memberBudgetId(account.id, key.memberAccountId), memberBudget, now, periods));
  const budget = accountBudget(config, account);
  if (budget !== null) checks.push(checkOf('account', account.id, budget, now, periods));
  return checks;
}

/**
 * Each session budget that applies to a request in session `sessionId`: the key's, then the account's.
 * None without a session: a request that names no session is not capped per session.
 */
export function sessionBudgetChecks(account: Account, key: ApiKeyRecord, sessionId: string | null): SessionBudgetCheck[] {
  if (sessionId === null) return [];
  const checks: SessionBudgetCheck[] = [];
  if (key.sessionBudget !== null) checks.push({ scope: 'key', id: key.id, sessionId, amount: key.sessionBudget });
  if (account.sessionBudget !== null) checks.push({ scope: 'account', id: account.id, sessionId, amount: account.sessionBudget });
  return checks;
}

/** "This API key's session budget of 2": how messages name a session budget. */
export function sessionBudgetName(check: Pick<SessionBudgetCheck, 'scope' | 'amount'>): string {
  return `${check.scope === 'key' ? "This API key's" : "This account's"} session budget of ${formatUnits(check.amount)}`;
}

export function checkOf(scope: BudgetScope, id: string, budget: Budget, now: Date, periods: PeriodCache): BudgetCheck {
  const { start, end } = periods.at(now, budget.period, budget.timezone);
  return { scope, id, amount: budget.amount, period: budget.period, timezone: budget.timezone, start, end };
}

const PERIOD_WORDS = { day: 'daily', week: 'weekly', month: 'monthly' } as const;

/** Whose budget it is, as a refusal names the level that refused. */
const OWNER_WORDS: Readonly<Record<BudgetScope, (period: string) => string>> = {
  key: (period) => `This API key's ${period} budget`,
  member: (period) => `The organisation's ${period} budget for this member`,
  account: (period) => `This account's ${period} budget`,
};

/**
 * "This API key's daily budget of 5 (Europe/Berlin)", "The organisation's daily budget for this member
 * of 5 (UTC)": how messages and alerts name a budget.
 */
export function budgetName(check: Pick<BudgetCheck, 'scope' | 'amount' | 'period' | 'timezone'>): string {
  return `${OWNER_WORDS[check.scope](PERIOD_WORDS[check.period])} of ${formatUnits(check.amount)} (${check.timezone})`;
}

/** RFC 3339 in UTC, to the second: when the budget's period ends. */
export function resetTime(check: Pick<BudgetCheck, 'end'>): string {
  return check.end.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
