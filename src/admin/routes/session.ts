/** Logging in and out, signing up, and the password: the routes that make and end console sessions. */
import type Router from '@koa/router';
import { ApiError, invalid } from '../api-error';
import { checkSameOrigin, signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiContext, type ApiState } from '../context';
import { accountName, newPassword, optionalEmail, requiredString } from '../fields';
import { readJsonObject } from '../json-body';
import { decoyHash, hashPassword, verifyPassword } from '../../auth/passwords';
import { csrfTokenFor, hashSecret, newSessionSecret, plausibleSecret, SESSION_COOKIE } from '../secrets';
import { accountView } from '../views';
import type { Account, AccountLogin } from '../../store/store';
import { AccountExistsError } from '../../store/store';
import { passwordChanged } from '../../audit/states';
import { audit } from '../audit';

const HOUR_MS = 3_600_000;
/** Expired sessions are deleted at most this often, piggybacking on logins. */
const SWEEP_INTERVAL_MS = HOUR_MS;

/**
 * The cookie reaches `/api` only: the console's pages need no credential (they are the same for
 * everyone), and `/v1` never sees it.
 */
const COOKIE_PATH = '/api';

/** 429 after too many of `what`, saying when to come back. */
function tooManyAttempts(what: string, waitSeconds: number): ApiError {
  return new ApiError('too_many_attempts', `Too many ${what}. Try again in ${Math.ceil(waitSeconds / 60)} min.`, undefined, {
    'retry-after': String(waitSeconds),
  });
}

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
    const secret = newSessionSecret();
    const expiresAt = new Date(Date.now() + ttlMs());
    await deps.store.createSession({ accountId: account.id, hash: hashSecret(secret), kind: 'session', name: null, expiresAt });
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
    const subjects = [`login:${login.toLowerCase()}`, `address:${ctx.ip}`];
    const wait = deps.loginLimiter.retryAfter(subjects, Date.now());
    if (wait > 0) {
      deps.metrics.recordLogin('limited');
      throw tooManyAttempts('wrong passwords', wait);
    }
    // Until this check is decided it counts against the limit, so a burst of guesses cannot all pass it.
    deps.loginLimiter.begin(subjects);
    let found: AccountLogin | null;
    try {
      found = await deps.store.findLogin(login);
      // Unknown names are checked against a decoy hash, so timing does not reveal which names exist.
      const matches = await verifyPassword(password, found?.passwordHash ?? (await decoyHash()));
      if (found === null || found.passwordHash === null || !matches) {
        deps.loginLimiter.fail(subjects, Date.now());
        // The address only: what was typed as the name may be a password typed in the wrong field.
        deps.logger.info({ address: ctx.ip }, 'console: wrong name or password');
        deps.metrics.recordLogin('wrong_password');
        throw new ApiError('invalid_credentials', 'The name or password is wrong.');
      }
    } finally {
      deps.loginLimiter.end(subjects);
    }
    deps.loginLimiter.succeed(subjects[0]);
    if (found.account.disabled) {
      deps.metrics.recordLogin('disabled');
      throw new ApiError('forbidden', 'This account is disabled; ask an administrator.');
    }
    deps.metrics.recordLogin('success');
    deps.logger.info({ account: found.account.name, address: ctx.ip }, 'console: logged in');
    ctx.body = await startSession(ctx, found.account);
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

  router.get('/session', signedIn(deps), (ctx) => {
    const caller = callerOf(ctx);
    ctx.body = { account: accountView(caller.account), csrf_token: caller.via === 'cookie' ? csrfTokenFor(caller.secret) : null };
  });

  router.delete('/session', signedIn(deps), async (ctx) => {
    const caller = callerOf(ctx);
    await deps.store.deleteSession(caller.session.id, caller.account.id);
    if (caller.via === 'cookie') ctx.cookies.set(SESSION_COOKIE, null, { path: COOKIE_PATH, httpOnly: true, sameSite: 'strict', secure: ctx.secure });
    ctx.status = 204;
  });

  router.put('/account/password', signedIn(deps), async (ctx) => {
    const caller = callerOf(ctx);
    const body = await readJsonObject(ctx);
    const current = requiredString(body, 'current_password', 'Your current password', 1024);
    const next = newPassword(body, 'new_password');
    // The same limit as logins: a stolen session must not become a way to guess the password.
    const subjects = [`login:${caller.account.name.toLowerCase()}`, `address:${ctx.ip}`];
    const wait = deps.loginLimiter.retryAfter(subjects, Date.now());
    if (wait > 0) {
      throw tooManyAttempts('wrong passwords', wait);
    }
    deps.loginLimiter.begin(subjects);
    try {
      const found = await deps.store.findLogin(caller.account.name);
      if (found?.passwordHash == null || !(await verifyPassword(current, found.passwordHash))) {
        deps.loginLimiter.fail(subjects, Date.now());
        throw invalid('current_password', 'This is not your current password.');
      }
    } finally {
      deps.loginLimiter.end(subjects);
    }
    await deps.store.setPassword(caller.account.id, await hashPassword(next));
    // Other logins of the account end: a changed password is often a response to a leak.
    let ended = 0;
    for (const session of await deps.store.listSessions(caller.account.id, 'session')) {
      if (session.id !== caller.session.id && (await deps.store.deleteSession(session.id, caller.account.id))) ended += 1;
    }
    await audit(deps, ctx, passwordChanged(caller.account.id, ended));
    ctx.status = 204;
  });
}
