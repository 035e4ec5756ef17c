/** Logging in and out, signing up, and the password: the routes that make and end console sessions. */
import type Router from '@koa/router';
import { ApiError, invalid } from '../api-error';
import { checkSameOrigin, signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiContext, type ApiState } from '../context';
import { accountName, newPassword, optionalEmail, optionalString, requiredString } from '../fields';
import { checkSecondFactor, requireCurrentCode, secondFactorRequired } from '../second-factor';
import { readJsonObject } from '../json-body';
import { hashPassword } from '../../auth/passwords';
import { csrfTokenFor, hashSecret, newSessionSecret, plausibleSecret, SESSION_COOKIE } from '../secrets';
import { accountView } from '../views';
import type { Account } from '../../store/store';
import { AccountExistsError } from '../../store/store';
import { passwordChanged } from '../../audit/states';
import { audit } from '../audit';
import { checkPassword, tooManyAttempts } from '../password-check';

const HOUR_MS = 3_600_000;
/** Expired sessions are deleted at most this often, piggybacking on logins. */
const SWEEP_INTERVAL_MS = HOUR_MS;

/**
 * The cookie reaches `/api` only: the console's pages need no credential (they are the same for
 * everyone), and `/v1` never sees it.
 */
const COOKIE_PATH = '/api';

/** Console sessions an account keeps at once; a new login past it ends the oldest. */
const MAX_SESSIONS = 20;
/** How much of a User-Agent is kept to show on the Account page. */
const USER_AGENT_CHARS = 200;

export function sessionRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  let lastSweep = 0;
  const ttlMs = () => deps.runtime.current.config.console.session_ttl_hours * HOUR_MS;

  /** A new session for `account`: any session the browser held is ended first (the id rotates at login). */
  async function startSession(ctx: ApiContext, account: Account) {
    const previous = ctx.cookies.get(SESSION_COOKIE);
    if (previous !== undefined && plausibleSecret(previous)) {
      const found = await deps.store.findSession(hashSecret(previous), new Date());
      if (found !== null) await deps.store.deleteSession(found.session.id, found.account.id);
    }
    // The oldest sessions end so that, with the new one, the account holds at most MAX_SESSIONS.
    const sessions = await deps.store.listSessions(account.id, 'session');
    for (const old of sessions.slice(MAX_SESSIONS - 1)) await deps.store.deleteSession(old.id, account.id);
    const secret = newSessionSecret();
    const expiresAt = new Date(Date.now() + ttlMs());
    const userAgent = ctx.get('user-agent').slice(0, USER_AGENT_CHARS) || null;
    await deps.store.createSession({ accountId: account.id, hash: hashSecret(secret), kind: 'session', name: null, expiresAt, userAgent });
    ctx.cookies.set(SESSION_COOKIE, secret, { httpOnly: true, sameSite: 'strict', secure: ctx.secure, path: COOKIE_PATH, expires: expiresAt, overwrite: true });
    if (Date.now() - lastSweep > SWEEP_INTERVAL_MS) {
      lastSweep = Date.now();
      void deps.store.deleteExpiredSessions(new Date()).catch((err: unknown) => deps.logger.warn({ err }, 'console: deleting expired sessions failed'));
    }
    return { account: accountView(account), csrf_token: csrfTokenFor(secret) };
  }

  router.post('/session', async (ctx) => {
    checkSameOrigin(ctx);
    const body = await readJsonObject(ctx);
    const login = requiredString(body, 'login', 'Your name or e-mail', 254);
    const password = requiredString(body, 'password', 'The password', 1024);
    const found = await checkPassword(deps, ctx.ip, login, password);
    if (found === null) {
      // The address only: what was typed as the name may be a password typed in the wrong field.
      deps.logger.info({ address: ctx.ip }, 'console: wrong name or password');
      deps.metrics.recordLogin('wrong_password');
      throw new ApiError('invalid_credentials', 'The name or password is wrong.');
    }
    if (found.account.disabled) {
      deps.metrics.recordLogin('disabled');
      throw new ApiError('forbidden', 'This account is disabled; ask an administrator.');
    }
    // With a second factor, the same request carries its code (a TOTP or a recovery code).
    const factor = await deps.store.getSecondFactor(found.account.id);
    if (factor?.confirmedAt != null) {
      const code = optionalString(body, 'code', 'The code', 64);
      if (code === null) throw new ApiError('two_factor_required', 'Enter the 6-digit code from your authenticator app, or a recovery code.', 'code');
      if (!(await checkSecondFactor(deps, ctx.ip, found.account, code, factor.secret))) {
        deps.metrics.recordLogin('wrong_password');
        throw new ApiError('invalid_credentials', 'This code is wrong or was used already.', 'code');
      }
    }
    deps.metrics.recordLogin('success');
    deps.logger.info({ account: found.account.name, address: ctx.ip }, 'console: logged in');
    const enrol = factor?.confirmedAt == null && secondFactorRequired(deps, found.account);
    ctx.body = { ...(await startSession(ctx, found.account)), enrol_2fa: enrol };
  });

  router.post('/signup', async (ctx) => {
    checkSameOrigin(ctx);
    if (!deps.runtime.current.config.console.signup) {
      throw new ApiError('signup_disabled', 'Sign-up is turned off here; ask an administrator for an account.');
    }
    // Each sign-up costs a scrypt hash and makes an account: an address gets as many per window as it
    // gets wrong passwords.
    const signups = [`signup:${ctx.ip}`];
    const wait = deps.loginLimiter.retryAfter(signups, Date.now());
    if (wait > 0) {
      throw tooManyAttempts('sign-ups from this address', wait);
    }
    const body = await readJsonObject(ctx);
    const name = accountName(body);
    const email = optionalEmail(body);
    const password = newPassword(body);
    deps.loginLimiter.fail(signups, Date.now());
    let account: Account;
    try {
      account = await deps.store.createAccount({ name, email, role: 'user', passwordHash: await hashPassword(password) });
    } catch (error) {
      if (error instanceof AccountExistsError) {
        throw new ApiError('conflict', error.field === 'email' ? 'This e-mail address is already in use.' : 'This name is taken.', error.field);
      }
      throw error;
    }
    deps.logger.info({ account: account.name }, 'console: account signed up');
    await audit(deps, ctx, { action: 'account.signup', target: account.id, accountId: account.id, before: null, after: { name: account.name, email: account.email, role: account.role } }, account);
    ctx.status = 201;
    ctx.body = await startSession(ctx, account);
  });

  router.get('/session', signedIn(deps, { beforeEnrolment: true }), (ctx) => {
    const caller = callerOf(ctx);
    ctx.body = { account: accountView(caller.account), csrf_token: caller.via === 'cookie' ? csrfTokenFor(caller.secret) : null };
  });

  router.delete('/session', signedIn(deps, { beforeEnrolment: true }), async (ctx) => {
    const caller = callerOf(ctx);
    await deps.store.deleteSession(caller.session.id, caller.account.id);
    if (caller.via === 'cookie') ctx.cookies.set(SESSION_COOKIE, null, { path: COOKIE_PATH, httpOnly: true, sameSite: 'strict', secure: ctx.secure });
    ctx.status = 204;
  });

  router.put('/account/password', signedIn(deps, { beforeEnrolment: true }), async (ctx) => {
    const caller = callerOf(ctx);
    const body = await readJsonObject(ctx);
    const current = requiredString(body, 'current_password', 'Your current password', 1024);
    const next = newPassword(body, 'new_password');
    // The same limit as logins: a stolen session must not become a way to guess the password.
    const found = await checkPassword(deps, ctx.ip, caller.account.name, current);
    if (found?.account.id !== caller.account.id) throw invalid('current_password', 'This is not your current password.');
    await requireCurrentCode(deps, ctx.ip, caller.account, optionalString(body, 'code', 'The code', 64));
    await deps.store.setPassword(caller.account.id, await hashPassword(next));
    // Every other login and every management token of the account ends: a changed password is often
    // a response to a leak, and a token minted from a stolen session must not outlive it.
    const ended = await deps.store.endSessions(caller.account.id, caller.via === 'cookie' ? caller.session.id : null);
    await audit(deps, ctx, passwordChanged(caller.account.id, ended));
    ctx.status = 204;
  });
}
