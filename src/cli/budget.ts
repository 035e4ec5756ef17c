/**
 * `tollgate key budget ID …` and `tollgate account budget NAME …`: a budget per day, week or month
 * from `--amount A --period P [--timezone TZ]`, or `--none` to remove it; `… session-budget …`: the
 * most one agent session may spend, from `--amount A`, or `--none`.
 */
import { isTimezone } from '../billing/budget-period';
import { formatUnits } from '../billing/money';
import type { Budget, BudgetPeriod } from '../store/store';
import { parsePositiveAmount } from './amount';
import { UsageError } from './args';

const PERIODS: readonly BudgetPeriod[] = ['day', 'week', 'month'];

export interface BudgetFlags {
  readonly amount?: string;
  readonly period?: string;
  readonly timezone?: string;
  readonly none?: boolean;
}

/** The budget the flags describe; null for `--none`. */
export function parseBudgetFlags(flags: BudgetFlags, usage: string): Budget | null {
  if (flags.none === true) {
    if (flags.amount !== undefined || flags.period !== undefined || flags.timezone !== undefined) {
      throw new UsageError(`--none removes the budget and takes no --amount, --period or --timezone; usage: tollgate ${usage}`);
    }
    return null;
  }
  if (flags.amount === undefined || flags.period === undefined) throw new UsageError(`--amount and --period are required (or --none); usage: tollgate ${usage}`);
  const period = flags.period.trim();
  if (!(PERIODS as readonly string[]).includes(period)) throw new UsageError(`invalid --period "${flags.period}": use day, week or month`);
  const timezone = flags.timezone?.trim() ?? 'UTC';
  if (!isTimezone(timezone)) throw new UsageError(`invalid --timezone "${flags.timezone}": use an IANA time zone such as UTC or Europe/Berlin`);
  return { amount: parsePositiveAmount(flags.amount, 'budget'), period: period as BudgetPeriod, timezone };
}

/** The session budget the flags describe, in nano-units; null for `--none`. */
export function parseSessionBudgetFlags(flags: BudgetFlags, usage: string): bigint | null {
  if (flags.period !== undefined || flags.timezone !== undefined) throw new UsageError(`a session budget has no period or time zone; usage: tollgate ${usage}`);
  if (flags.none === true) {
    if (flags.amount !== undefined) throw new UsageError(`--none removes the session budget and takes no --amount; usage: tollgate ${usage}`);
    return null;
  }
  if (flags.amount === undefined) throw new UsageError(`--amount is required (or --none); usage: tollgate ${usage}`);
  return parsePositiveAmount(flags.amount, 'session budget');
}

/** "2 a session", or "none". */
export function formatSessionBudget(amount: bigint | null): string {
  return amount === null ? 'none' : `${formatUnits(amount)} a session`;
}

/** "5 a day (Europe/Berlin)", or "none". */
export function formatBudget(budget: Budget | null): string {
  return budget === null ? 'none' : `${formatUnits(budget.amount)} a ${budget.period} (${budget.timezone})`;
}
