/** The signed-in account's own numbers: balance, today's spend, spend per day, credits. */
import type Router from '@koa/router';
import { formatUnits } from '../../billing/money';
import { invalid } from '../api-error';
import { signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiState } from '../context';
import { accountView, creditView } from '../views';
import { limitParam } from './query';

const DAY_MS = 86_400_000;

function startOfUtcDay(at: number): Date {
  return new Date(Math.floor(at / DAY_MS) * DAY_MS);
}

export function accountRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  router.get('/account', signedIn(deps, { beforeEnrolment: true }), async (ctx) => {
    const { account } = callerOf(ctx);
    const [balance, today] = await Promise.all([deps.funds.balance(account.id), deps.store.dailyUsage(account.id, startOfUtcDay(Date.now()))]);
    ctx.body = {
      account: accountView(account),
      balance: formatUnits(balance.balance),
      held: formatUnits(balance.held),
      available: formatUnits(balance.balance - balance.held),
      today: { requests: today[0]?.requests ?? 0, cost: formatUnits(today[0]?.cost ?? 0n) },
    };
  });

  /** Exactly `days` entries ending today (UTC), zero-filled, for the dashboard's chart. */
  router.get('/usage/daily', signedIn(deps), async (ctx) => {
    const { account } = callerOf(ctx);
    const days = Number(ctx.query.days ?? 14);
    if (!Number.isSafeInteger(days) || days < 1 || days > 366) throw invalid('days', 'days must be a whole number from 1 to 366.');
    const first = startOfUtcDay(Date.now() - (days - 1) * DAY_MS);
    const found = new Map((await deps.store.dailyUsage(account.id, first)).map((day) => [day.day, day]));
    ctx.body = {
      days: Array.from({ length: days }, (_, index) => {
        const day = new Date(first.getTime() + index * DAY_MS).toISOString().slice(0, 10);
        const usage = found.get(day);
        return { day, requests: usage?.requests ?? 0, cost: formatUnits(usage?.cost ?? 0n) };
      }),
    };
  });

  router.get('/credits', signedIn(deps), async (ctx) => {
    const { account } = callerOf(ctx);
    const credits = await deps.store.listCredits(account.id, limitParam(ctx.query.limit, 50, 1000));
    ctx.body = { credits: credits.map(creditView) };
  });
}
