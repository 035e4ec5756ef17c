/**
 * The signed-in account's console sessions and management tokens (created, last used, the browser
 * or client), ending any or all of them; and an administrator ending every session and token of an
 * account. Both are read from the store at every request, so an ended one is refused at once on
 * every instance.
 */
import type Router from '@koa/router';
import { notFound } from '../api-error';
import { adminOnly, signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiContext, type ApiState } from '../context';
import { sessionView, tokenView } from '../views';
import { audit } from '../audit';
import { sessionsEnded } from '../../audit/states';

export function sessionListRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  const params = (ctx: ApiContext) => ctx.params as Readonly<Record<string, string>>;

  router.get('/account/sessions', signedIn(deps, { beforeEnrolment: true }), async (ctx) => {
    const { account, session } = callerOf(ctx);
    const [sessions, tokens] = await Promise.all([deps.store.listSessions(account.id, 'session'), deps.store.listSessions(account.id, 'token')]);
    ctx.body = { sessions: sessions.map((listed) => sessionView(listed, session.id)), tokens: tokens.map(tokenView) };
  });

  /** Ends every session and token but the caller's own. */
  router.delete('/account/sessions', signedIn(deps, { beforeEnrolment: true }), async (ctx) => {
    const { account, session } = callerOf(ctx);
    const ended = await deps.store.endSessions(account.id, session.id);
    await audit(deps, ctx, sessionsEnded(account.id, 'all others', ended));
    ctx.body = { ended };
  });

  router.delete('/account/sessions/:id', signedIn(deps, { beforeEnrolment: true }), async (ctx) => {
    const { account } = callerOf(ctx);
    const id = params(ctx).id;
    if (!(await deps.store.deleteSession(id, account.id))) throw notFound('This session');
    await audit(deps, ctx, sessionsEnded(account.id, id, 1));
    ctx.status = 204;
  });

  router.delete('/admin/accounts/:id/sessions', signedIn(deps), adminOnly, async (ctx) => {
    const account = await deps.store.findAccountById(params(ctx).id);
    if (account === null) throw notFound('This account');
    const caller = callerOf(ctx);
    const ended = await deps.store.endSessions(account.id, account.id === caller.account.id ? caller.session.id : null);
    deps.logger.info({ account: account.name, ended, by: caller.account.name }, 'console: sessions and tokens ended');
    await audit(deps, ctx, sessionsEnded(account.id, 'all', ended));
    ctx.body = { ended };
  });
}
