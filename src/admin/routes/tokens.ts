/** Management tokens: what an operator's scripts send to `/api` instead of a console login. */
import type Router from '@koa/router';
import { ApiError, notFound } from '../api-error';
import { signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiState } from '../context';
import { optionalString } from '../fields';
import { readJsonObject } from '../json-body';
import { hashSecret, newManagementToken } from '../secrets';
import { tokenView } from '../views';
import { audit } from '../audit';
import { tokenCreated, tokenRevoked } from '../../audit/states';

const MAX_TOKENS = 20;

export function tokenRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  router.get('/tokens', signedIn(deps), async (ctx) => {
    const { account } = callerOf(ctx);
    ctx.body = { tokens: (await deps.store.listSessions(account.id, 'token')).map(tokenView) };
  });

  router.post('/tokens', signedIn(deps), async (ctx) => {
    const { account } = callerOf(ctx);
    const body = await readJsonObject(ctx);
    const name = optionalString(body, 'name', 'A name', 60);
    if ((await deps.store.listSessions(account.id, 'token')).length >= MAX_TOKENS) {
      throw new ApiError('conflict', `An account holds at most ${MAX_TOKENS} management tokens; revoke one first.`);
    }
    const secret = newManagementToken();
    const token = await deps.store.createSession({ accountId: account.id, hash: hashSecret(secret), kind: 'token', name, expiresAt: null });
    deps.logger.info({ account: account.name, token: token.id }, 'console: management token created');
    await audit(deps, ctx, tokenCreated(token));
    ctx.status = 201;
    ctx.body = { token: tokenView(token), secret };
  });

  router.delete('/tokens/:id', signedIn(deps), async (ctx) => {
    const { account } = callerOf(ctx);
    const tokens = await deps.store.listSessions(account.id, 'token');
    const token = tokens.find((candidate) => candidate.id === ctx.params.id);
    if (token === undefined) throw notFound('This token');
    await deps.store.deleteSession(token.id, account.id);
    await audit(deps, ctx, tokenRevoked(token));
    ctx.status = 204;
  });
}
