/**
 * Which budgets a request is held against: its key's, and its account's own or else the operator's
 * default for the account's role (`budgets.role_defaults`). Each is checked against the spend of its
 * current period, so a changed budget applies from the next request on.
 */
import type { GatewayConfig } from '../config/types';
import type { BudgetData } from '../config/schema-types';
import type { Account, AccountRole, ApiKeyRecord, Budget, BudgetCheck, BudgetScope, SessionBudgetCheck } from '../store/store';
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

/** Each budget that applies to a request by `key` of `account`, in its period at `now`. */
export function budgetChecks(config: GatewayConfig, account: Account, key: ApiKeyRecord, now: Date, periods: PeriodCache): BudgetCheck[] {
  const checks: BudgetCheck[] = [];
  if (key.budget !== null) checks.push(checkOf('key', key.id, key.budget, now, periods));
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

/** "This API key's daily budget of 5 (Europe/Berlin)": how messages and alerts name a budget. */
export function budgetName(check: Pick<BudgetCheck, 'scope' | 'amount' | 'period' | 'timezone'>): string {
  const owner = check.scope === 'key' ? "This API key's" : "This account's";
  return `${owner} ${PERIOD_WORDS[check.period]} budget of ${formatUnits(check.amount)} (${check.timezone})`;
}

/** RFC 3339 in UTC, to the second: when the budget's period ends. */
export function resetTime(check: Pick<BudgetCheck, 'end'>): string {
  return check.end.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
