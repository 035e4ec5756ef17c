/**
 * Administrators: the money side of the gateway's totals over a range. Usage charged is what accounts
 * spent; it is not what the business received. This puts beside it what card payments brought in,
 * what refunds and disputes took back, what was credited by hand or by codes, and what accounts still
 * hold (balances not yet spent: money received that is owed as service).
 */
import type Router from '@koa/router';
import { formatUnits } from '../../billing/money';
import { adminOnly, signedIn } from '../authenticate';
import type { AdminDeps, ApiState } from '../context';
import { rangeOf } from './insight';

export function adminMoneyRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  router.get('/admin/money', signedIn(deps), adminOnly, async (ctx) => {
    const range = rangeOf(ctx);
    const [moved, charged, ledger] = await Promise.all([
      deps.store.payments.movementTotals(range.since, range.until),
      deps.store.chargeTotals({ since: range.since, until: range.until }),
      deps.store.ledgerTotals(),
    ]);
    const { credits, debits } = moved;
    const received = credits.topup - debits.refund - debits.dispute + credits.dispute_won;
    const positive = ledger.reduce((sum, account) => sum + (account.balance > 0n ? account.balance : 0n), 0n);
    const negative = ledger.reduce((sum, account) => sum + (account.balance < 0n ? -account.balance : 0n), 0n);
    ctx.body = {
      since: range.since.toISOString(),
      until: range.until.toISOString(),
      usage_charged: formatUnits(charged.cost),
      requests: charged.requests,
      card_payments: formatUnits(credits.topup),
      refunds: formatUnits(debits.refund),
      disputes: formatUnits(debits.dispute),
      disputes_won: formatUnits(credits.dispute_won),
      received: formatUnits(received),
      admin_credits: formatUnits(credits.admin),
      redemptions: formatUnits(credits.redemption),
      adjustments: formatUnits(debits.adjustment),
      // Now, not over the range: what every account holds as written to the ledger.
      outstanding: formatUnits(positive),
      owed_by_accounts: formatUnits(negative),
    };
  });
}
