/**
 * Usage: the ledger's charges, filtered by key, model and dates, as JSON or a CSV download. A user
 * sees their own; an administrator may name any account, or `account_id=all`.
 */
import type Router from '@koa/router';
import { ApiError } from '../api-error';
import { signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiContext, type ApiState } from '../context';
import { attachment, toCsv } from '../csv';
import { USAGE_FIELDS, usageView } from '../views';
import { dateParam, limitParam, single } from './query';

const PAGE_LIMIT = 1000;
const EXPORT_LIMIT = 100_000;

/** Whose charges: the caller's own unless an admin asks for another account or all. */
export function accountScope(ctx: ApiContext): string | undefined {
  const { account } = callerOf(ctx);
  const asked = single(ctx.query.account_id, 'account_id');
  if (asked === undefined || asked === account.id) return account.id;
  if (account.role !== 'admin') throw new ApiError('forbidden', 'Only administrators may read the usage of other accounts.');
  return asked === 'all' ? undefined : asked;
}

export function usageRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  router.get('/usage', signedIn(deps), async (ctx) => {
    const csv = single(ctx.query.format, 'format') === 'csv';
    const accountId = accountScope(ctx);
    const charges = await deps.store.listCharges({
      accountId,
      keyId: single(ctx.query.key_id, 'key_id'),
      model: single(ctx.query.model, 'model'),
      since: dateParam(ctx.query.since, 'since', 'start'),
      until: dateParam(ctx.query.until, 'until', 'end'),
      limit: csv ? limitParam(ctx.query.limit, EXPORT_LIMIT, EXPORT_LIMIT) : limitParam(ctx.query.limit, 100, PAGE_LIMIT),
    });
    const keys = await deps.store.listKeys(accountId === undefined ? undefined : { accountId });
    const names = new Map(keys.map((key) => [key.id, key.name]));
    const rows = charges.map((charge) => usageView(charge, names));
    if (!csv) {
      ctx.body = { usage: rows };
      return;
    }
    attachment(ctx, `tollgate-usage-${new Date().toISOString().slice(0, 10)}.csv`);
    ctx.body = toCsv(USAGE_FIELDS, rows);
  });
}
