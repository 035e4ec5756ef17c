/**
 * Who is calling the management API, and whether they may change anything. Two credentials work
 * here and only here: the console's session cookie and a management token (`Bearer tgm_…`). API keys
 * (`sk-…`) are for `/v1` and are refused, just as `/v1` ignores the cookie: a leaked key must not
 * open the console, and a page that can ride a cookie must not spend through `/v1`.
 */
import type { Next } from 'koa';
import { ApiError } from './api-error';
import type { AdminDeps, ApiContext, Caller } from './context';
import { enrolmentRequired, hasSecondFactor, secondFactorRequired } from './second-factor';
import { csrfTokenMatches, hashSecret, MANAGEMENT_TOKEN_PREFIX, plausibleSecret, SESSION_COOKIE } from './secrets';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** A session's last use is written at most this often: the Account page shows it to the minute. */
const TOUCH_INTERVAL_MS = 60_000;

function bearerOf(ctx: ApiContext): string | null {
  const header = ctx.get('authorization');
  if (header === '') return null;
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  if (match === null) throw new ApiError('unauthenticated', 'Send a management token as "Authorization: Bearer tgm_…".');
  return match[1];
}

function refuseApiKey(): never {
  throw new ApiError(
    'unauthenticated',
    'API keys (sk-…) work on the model endpoints under /v1 only. The management API takes a console login or a management token (tgm_…).',
  );
}

async function fromToken(deps: AdminDeps, token: string): Promise<Caller | null> {
  if (token.startsWith('sk-')) refuseApiKey();
  if (!token.startsWith(MANAGEMENT_TOKEN_PREFIX) || !plausibleSecret(token)) return null;
  const found = await deps.store.findSession(hashSecret(token), new Date());
  if (found === null || found.session.kind !== 'token') return null;
  return { ...found, via: 'token', secret: token };
}

async function fromCookie(deps: AdminDeps, ctx: ApiContext): Promise<Caller | null> {
  const secret = ctx.cookies.get(SESSION_COOKIE);
  if (secret === undefined || !plausibleSecret(secret)) return null;
  const found = await deps.store.findSession(hashSecret(secret), new Date());
  if (found === null || found.session.kind !== 'session') return null;
  return { ...found, via: 'cookie', secret };
}

/** The caller, or null when the request carries no valid credential. */
async function identify(deps: AdminDeps, ctx: ApiContext): Promise<Caller | null> {
  if (ctx.get('x-api-key') !== '') refuseApiKey();
  const token = bearerOf(ctx);
  return token === null ? fromCookie(deps, ctx) : fromToken(deps, token);
}

/**
 * A state change made with the cookie must come from the console itself: the browser's Origin (when
 * sent) is ours, and the request carries the CSRF token only the console's own script could read.
 */
export function checkSameOrigin(ctx: ApiContext): void {
  const origin = ctx.get('origin');
  // Our own origin, built here: Koa 3's `ctx.origin` is the request's Origin header, not ours.
  const own = `${ctx.protocol}://${ctx.host}`;
  if (origin !== '' && origin !== own) {
    const behindTls = origin === `https://${ctx.host}` && ctx.protocol === 'http';
    throw new ApiError(
      'csrf_failed',
      behindTls ? 'Cross-site requests are refused. Behind a TLS proxy, set server.trust_proxy: true.' : 'Cross-site requests are refused.',
    );
  }
  if (ctx.get('sec-fetch-site') === 'cross-site') throw new ApiError('csrf_failed', 'Cross-site requests are refused.');
}

function checkCsrf(ctx: ApiContext, caller: Caller): void {
  if (caller.via !== 'cookie' || SAFE_METHODS.has(ctx.method)) return;
  checkSameOrigin(ctx);
  const presented = ctx.get('x-csrf-token');
  if (presented === '' || !csrfTokenMatches(caller.secret, presented)) {
    throw new ApiError('csrf_failed', 'The CSRF token is missing or wrong; reload the console and try again.');
  }
}

/** Records the session's use, off the request's path; a failure to write it refuses nothing. */
function touch(deps: AdminDeps, { session }: Caller): void {
  const now = new Date();
  if (session.lastUsedAt !== null && now.getTime() - session.lastUsedAt.getTime() < TOUCH_INTERVAL_MS) return;
  void deps.store.touchSession(session.id, now).catch((err: unknown) => deps.logger.warn({ err }, 'console: recording a session\'s last use failed'));
}

/**
 * Middleware: the route needs a signed-in, enabled account. An account that `console.require_2fa`
 * says must have a second factor, and has none yet, reaches only the routes marked
 * `beforeEnrolment` (its session, its account, enrolling): everything else is 403 until it enrols.
 */
export function signedIn(deps: AdminDeps, options: { beforeEnrolment?: boolean } = {}) {
  return async function requireSignedIn(ctx: ApiContext, next: Next): Promise<void> {
    const caller = await identify(deps, ctx);
    if (caller === null) throw new ApiError('unauthenticated', 'Log in to the console, or send a management token.');
    if (caller.account.disabled) throw new ApiError('forbidden', 'This account is disabled; ask an administrator.');
    checkCsrf(ctx, caller);
    if (options.beforeEnrolment !== true && secondFactorRequired(deps, caller.account) && !(await hasSecondFactor(deps, caller.account.id))) {
      throw enrolmentRequired();
    }
    touch(deps, caller);
    ctx.state.caller = caller;
    await next();
  };
}

/** Middleware after `signedIn`: the route is for administrators. */
export async function adminOnly(ctx: ApiContext, next: Next): Promise<void> {
  if (ctx.state.caller?.account.role !== 'admin') throw new ApiError('forbidden', 'This needs an administrator account.');
  await next();
}
