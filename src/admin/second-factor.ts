/**
 * The second factor at sign-in and the `console.require_2fa` policy. A code is a TOTP of the
 * account's enrolled secret, each time step accepted once (so a code seen over a shoulder or in a
 * proxy log cannot be replayed), or one of its recovery codes, each spent once. Wrong codes count
 * against the login limiter like wrong passwords.
 */
import { normalizeRecoveryCode, totpStep } from '../auth/totp';
import type { Account } from '../store/store';
import { ApiError } from './api-error';
import type { AdminDeps } from './context';
import { hashSecret } from './secrets';
import { loginSubjects, tooManyAttempts } from './password-check';

/** Whether `code` (a TOTP or a recovery code) signs `account` in; a wrong or replayed one is counted. */
export async function checkSecondFactor(deps: AdminDeps, address: string, account: Account, code: string, secret: string): Promise<boolean> {
  const subjects = loginSubjects({ account, passwordHash: null }, account.name, address);
  const wait = deps.loginLimiter.retryAfter(subjects, Date.now());
  if (wait > 0) throw tooManyAttempts('sign-in attempts', wait);
  const typed = code.trim();
  let accepted: boolean;
  if (/^\d{6}$/.test(typed)) {
    const step = totpStep(secret, typed, Date.now());
    accepted = step !== null && (await deps.store.useTotpStep(account.id, step));
  } else {
    accepted = await deps.store.useRecoveryCode(account.id, hashSecret(normalizeRecoveryCode(typed)), new Date());
  }
  if (!accepted) deps.loginLimiter.fail(subjects, Date.now());
  return accepted;
}

/**
 * Whether `account` must have a second factor under the policy: `admins` holds every administrator
 * from the first sign-in, a fresh install's first one included (`tollgate account reset-2fa` is the
 * way back in for one who lost the phone).
 */
export function secondFactorRequired(deps: AdminDeps, account: Account): boolean {
  const policy = deps.runtime.current.config.console.require_2fa;
  return policy === 'all' || (policy === 'admins' && account.role === 'admin');
}

/**
 * A change that could lock the owner out or outlive the session (turning the second factor off, a new
 * management token, a new password) needs, beside the password, a current code when the account has a
 * second factor: a stolen session and a phished password are not enough. The code arrives as `code`,
 * a TOTP or a recovery code, and is asked for in the login's own way (`two_factor_required`).
 */
export async function requireCurrentCode(deps: AdminDeps, address: string, account: Account, code: string | null): Promise<void> {
  const factor = await deps.store.getSecondFactor(account.id);
  if (factor?.confirmedAt == null) return;
  if (code === null) throw new ApiError('two_factor_required', 'Enter the 6-digit code from your authenticator app, or a recovery code.', 'code');
  if (!(await checkSecondFactor(deps, address, account, code, factor.secret))) {
    throw new ApiError('invalid_credentials', 'This code is wrong or was used already.', 'code');
  }
}

/** Whether the account has a confirmed second factor. */
export async function hasSecondFactor(deps: AdminDeps, accountId: string): Promise<boolean> {
  return ((await deps.store.getSecondFactor(accountId))?.confirmedAt ?? null) !== null;
}

export function enrolmentRequired(): ApiError {
  return new ApiError(
    'two_factor_enrolment_required',
    'This account must sign in with a second factor: set up an authenticator app on the Account page first.',
  );
}
