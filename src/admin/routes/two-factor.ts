/**
 * Two-factor sign-in for the signed-in account: enrol (the password, then a QR code to scan and a
 * first code to confirm it, then recovery codes shown once), see its state, turn it off (the password
 * and a current code). Every change
 * ends the account's other sessions and all its management tokens: whoever held them signed in under
 * the old rule.
 */
import type Router from '@koa/router';
import { newRecoveryCodes, newTotpSecret, normalizeRecoveryCode, qrModules, totpStep, totpUri } from '../../auth/totp';
import { ApiError, invalid } from '../api-error';
import { signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiContext, type ApiState, type Caller } from '../context';
import { optionalString, requiredString } from '../fields';
import { readJsonObject } from '../json-body';
import { checkPassword, loginSubjects, tooManyAttempts } from '../password-check';
import { hashSecret } from '../secrets';
import { requireCurrentCode, secondFactorRequired } from '../second-factor';
import { audit } from '../audit';

const ISSUER = 'Tollgate';

export function twoFactorRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  const beforeEnrolment = signedIn(deps, { beforeEnrolment: true });

  async function requirePassword(ctx: ApiContext, caller: Caller, password: string): Promise<void> {
    const found = await checkPassword(deps, ctx.ip, caller.account.name, password);
    if (found?.account.id !== caller.account.id) throw invalid('password', 'This is not your password.');
  }

  /** Ends every other session and every token: the rule they signed in under changed. */
  async function endOthers(caller: Caller): Promise<number> {
    return deps.store.endSessions(caller.account.id, caller.via === 'cookie' ? caller.session.id : null);
  }

  router.get('/account/2fa', beforeEnrolment, async (ctx) => {
    const { account } = callerOf(ctx);
    const factor = await deps.store.getSecondFactor(account.id);
    ctx.body = {
      enabled: factor?.confirmedAt != null,
      recovery_codes_left: factor?.confirmedAt != null ? await deps.store.recoveryCodesLeft(account.id) : 0,
      required: secondFactorRequired(deps, account),
    };
  });

  router.post('/account/2fa', beforeEnrolment, async (ctx) => {
    const caller = callerOf(ctx);
    const body = await readJsonObject(ctx);
    await requirePassword(ctx, caller, requiredString(body, 'password', 'Your password', 1024));
    const existing = await deps.store.getSecondFactor(caller.account.id);
    if (existing?.confirmedAt != null) throw new ApiError('conflict', 'Two-factor sign-in is already on; turn it off first to enrol another device.');
    const secret = newTotpSecret();
    await deps.store.beginSecondFactor(caller.account.id, secret);
    const uri = totpUri(secret, caller.account.name, ISSUER);
    ctx.status = 201;
    ctx.body = { secret, uri, qr: qrModules(uri) };
  });

  router.post('/account/2fa/confirm', beforeEnrolment, async (ctx) => {
    const caller = callerOf(ctx);
    const body = await readJsonObject(ctx);
    const code = requiredString(body, 'code', 'The 6-digit code', 16).trim();
    const subjects = loginSubjects({ account: caller.account, passwordHash: null }, caller.account.name, ctx.ip);
    const wait = deps.loginLimiter.retryAfter(subjects, Date.now());
    if (wait > 0) throw tooManyAttempts('wrong codes', wait);
    const pending = await deps.store.getSecondFactor(caller.account.id);
    if (pending === null || pending.confirmedAt !== null) throw new ApiError('conflict', 'Start the enrolment first (POST /api/account/2fa).');
    const step = totpStep(pending.secret, code, Date.now());
    const codes = newRecoveryCodes();
    if (step === null || !(await deps.store.confirmSecondFactor(caller.account.id, step, codes.map((text) => hashSecret(normalizeRecoveryCode(text)))))) {
      deps.loginLimiter.fail(subjects, Date.now());
      throw invalid('code', 'This code is wrong; check the time on your phone and try the next one.');
    }
    const ended = await endOthers(caller);
    await audit(deps, ctx, { action: 'account.2fa', target: caller.account.id, accountId: caller.account.id, before: { enabled: false }, after: { enabled: true, sessions_ended: ended } });
    ctx.body = { recovery_codes: codes };
  });

  router.delete('/account/2fa', beforeEnrolment, async (ctx) => {
    const caller = callerOf(ctx);
    const body = await readJsonObject(ctx);
    await requirePassword(ctx, caller, requiredString(body, 'password', 'Your password', 1024));
    if (secondFactorRequired(deps, caller.account)) {
      throw new ApiError('forbidden', 'Two-factor sign-in is required for this account here (console.require_2fa); it cannot be turned off.');
    }
    await requireCurrentCode(deps, ctx.ip, caller.account, optionalString(body, 'code', 'The code', 64));
    if (!(await deps.store.removeSecondFactor(caller.account.id))) throw new ApiError('conflict', 'Two-factor sign-in is not on.');
    const ended = await endOthers(caller);
    await audit(deps, ctx, { action: 'account.2fa', target: caller.account.id, accountId: caller.account.id, before: { enabled: true }, after: { enabled: false, sessions_ended: ended } });
    ctx.status = 204;
  });
}
