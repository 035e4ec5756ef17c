/**
 * The caller's budgets with what each has spent in its current period and when it resets (its own
 * account's, its role's default, its keys'), and the alerts its account has had: the console's
 * period bars and its banner read this.
 */
import type Router from '@koa/router';
import { PeriodCache } from '../../billing/budget-period';
import { accountBudget, checkOf } from '../../billing/budgets';
import type { BudgetCheck } from '../../store/store';
import { signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiState } from '../context';
import { alertView, budgetSpendView } from '../views';

/** Alerts listed: the recent history, enough for a banner and a page. */
const ALERTS_LISTED = 50;

export function budgetRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  router.get('/budgets', signedIn(deps), async (ctx) => {
    const caller = callerOf(ctx).account;
    const { config, chain } = deps.runtime.current;
    const book = chain.service('billing') ?? null;
    const account = (await deps.store.findAccountById(caller.id)) ?? caller;
    const now = new Date();
    const periods = new PeriodCache();
    const rows: { check: BudgetCheck; name: string | null; roleDefault: boolean }[] = [];
    const own = accountBudget(config, account);
    if (own !== null) rows.push({ check: checkOf('account', account.id, own, now, periods), name: account.name, roleDefault: account.budget === null });
    for (const key of await deps.store.listKeys({ accountId: account.id })) {
      if (key.budget !== null && key.revokedAt === null) rows.push({ check: checkOf('key', key.id, key.budget, now, periods), name: key.name, roleDefault: false });
    }
    const budgets = await Promise.all(
      rows.map(async ({ check, name, roleDefault }) => {
        const spent = book === null ? await deps.store.periodSpend(check.scope, check.id, check.start, check.end) : await book.budgetSpent(check);
        return budgetSpendView(check, name, roleDefault, spent);
      }),
    );
    const alerts = await deps.store.listAlerts({ accountId: account.id, limit: ALERTS_LISTED });
    ctx.body = { budgets, alerts: alerts.map(alertView) };
  });
}
