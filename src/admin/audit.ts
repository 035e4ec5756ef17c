/**
 * The management API's side of the audit log: who is calling (an account through the console or a
 * management token) and the request id, added to each change a route makes. A failed append is
 * logged at error level and never undoes or fails the change, which has already happened.
 */
import type { AuditChange } from '../audit/states';
import type { Account } from '../store/store';
import { callerOf, type AdminDeps, type ApiContext } from './context';

/** Appends `change` as done by the signed-in caller (or by `actor`, for a sign-up that has no caller yet). */
export async function audit(deps: AdminDeps, ctx: ApiContext, change: AuditChange, actor?: Account): Promise<void> {
  const caller = actor === undefined ? callerOf(ctx) : null;
  const entry = {
    ...change,
    actor: caller?.account.name ?? actor!.name,
    surface: caller?.via === 'token' ? ('api' as const) : ('console' as const),
    requestId: ctx.state.requestId,
  };
  try {
    await deps.store.appendAudit(entry);
  } catch (err) {
    deps.logger.error({ err, requestId: ctx.state.requestId, audit: { action: entry.action, actor: entry.actor, target: entry.target } }, 'audit: appending an entry failed');
  }
}
