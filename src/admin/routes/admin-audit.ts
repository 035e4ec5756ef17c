/** Administrators: the audit log, filtered by actor, target, action and time, as JSON or a CSV download. */
import type Router from '@koa/router';
import { AUDIT_ACTIONS, type AuditAction } from '../../store/audit';
import { invalid } from '../api-error';
import { adminOnly, signedIn } from '../authenticate';
import type { AdminDeps, ApiState } from '../context';
import { attachment, toCsv } from '../csv';
import { AUDIT_FIELDS, auditCsvRow, auditView } from '../views';
import { dateParam, limitParam, single } from './query';

function actionParam(value: string | string[] | undefined): AuditAction | undefined {
  const text = single(value, 'action');
  if (text === undefined) return undefined;
  if (!(AUDIT_ACTIONS as readonly string[]).includes(text)) throw invalid('action', `action is one of ${AUDIT_ACTIONS.join(', ')}.`);
  return text as AuditAction;
}

export function adminAuditRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  router.get('/admin/audit', signedIn(deps), adminOnly, async (ctx) => {
    const csv = single(ctx.query.format, 'format') === 'csv';
    const entries = await deps.store.listAudit({
      actor: single(ctx.query.actor, 'actor'),
      target: single(ctx.query.target, 'target'),
      action: actionParam(ctx.query.action),
      since: dateParam(ctx.query.since, 'since', 'start'),
      until: dateParam(ctx.query.until, 'until', 'end'),
      limit: limitParam(ctx.query.limit, csv ? 100_000 : 100, csv ? 100_000 : 1000),
    });
    if (!csv) {
      // Names beside ids: the account each entry belongs to, as it is called now.
      const names = new Map((await deps.store.listAccounts()).map((account) => [account.id, account.name]));
      ctx.body = {
        entries: entries.map((entry) => ({ ...auditView(entry), account_name: entry.accountId === null ? null : (names.get(entry.accountId) ?? null) })),
        actions: AUDIT_ACTIONS,
      };
      return;
    }
    attachment(ctx, `tollgate-audit-${new Date().toISOString().slice(0, 10)}.csv`);
    ctx.body = toCsv(AUDIT_FIELDS, entries.map(auditCsvRow));
  });
}
