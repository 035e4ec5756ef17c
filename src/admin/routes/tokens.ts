/**
 * Management tokens: what an operator's scripts send to `/api` instead of a console login. Minting
 * one asks for the account's password (and, with two-factor sign-in on, a current code), so a stolen session cookie cannot turn itself into a lasting
 * credential; every token expires (90 days unless the owner chooses), and records its last use.
 */
import type Router from '@koa/router';
import { ApiError, invalid, notFound } from '../api-error';
import { signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiState } from '../context';
import { optionalString, requiredString } from '../fields';
import { readJsonObject, type JsonObject } from '../json-body';
import { DEFAULT_TOKEN_DAYS, hashSecret, newManagementToken } from '../secrets';
import { tokenView } from '../views';
import { audit } from '../audit';
import { tokenCreated, tokenRevoked } from '../../audit/states';
import { checkPassword } from '../password-check';
import { requireCurrentCode } from '../second-factor';

const MAX_TOKENS = 20;
const DAY_MS = 86_400_000;
const MAX_TOKEN_DAYS = 366;

/** `expires_in_days`: a whole number of days from 1 to a year; absent, the default. */
function lifetimeDays(body: JsonObject): number {
  const value = body.expires_in_days;
  if (value === undefined || value === null) return DEFAULT_TOKEN_DAYS;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_TOKEN_DAYS) {
    throw invalid('expires_in_days', `A token lasts a whole number of days, from 1 to ${MAX_TOKEN_DAYS}.`);
  }
  return value;
}

export function tokenRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  router.get('/tokens', signedIn(deps), async (ctx) => {
    const { account } = callerOf(ctx);
    ctx.body = { tokens: (await deps.store.listSessions(account.id, 'token')).map(tokenView) };
  });

  router.post('/tokens', signedIn(deps), async (ctx) => {
    const { account } = callerOf(ctx);
    const body = await readJsonObject(ctx);
    const name = optionalString(body, 'name', 'A name', 60);
    const password = requiredString(body, 'password', 'Your password', 1024);
    const days = lifetimeDays(body);
    const found = await checkPassword(deps, ctx.ip, account.name, password);
    if (found?.account.id !== account.id) throw invalid('password', 'This is not your password.');
    await requireCurrentCode(deps, ctx.ip, account, optionalString(body, 'code', 'The code', 64));
    if ((await deps.store.listSessions(account.id, 'token')).length >= MAX_TOKENS) {
      throw new ApiError('conflict', `An account holds at most ${MAX_TOKENS} management tokens; revoke one first.`);
    }
    const secret = newManagementToken();
    const expiresAt = new Date(Date.now() + days * DAY_MS);
    const userAgent = ctx.get('user-agent').slice(0, 200) || null;
    const token = await deps.store.createSession({ accountId: account.id, hash: hashSecret(secret), kind: 'token', name, expiresAt, userAgent });
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
