/**
 * Checking a console password, wherever one is asked for (login, a new password, a management
 * token): under the login limiter, keyed on the account the login resolves to and on the address,
 * and through the process's one password-hashing queue.
 */
import { decoyHash, verifyPassword } from '../auth/passwords';
import type { AccountLogin } from '../store/store';
import { ApiError } from './api-error';
import type { AdminDeps } from './context';

/** 429 after too many of `what`, saying when to come back. */
export function tooManyAttempts(what: string, waitSeconds: number): ApiError {
  return new ApiError('too_many_attempts', `Too many ${what}. Try again in ${Math.ceil(waitSeconds / 60)} min.`, undefined, {
    'retry-after': String(waitSeconds),
  });
}

/**
 * What a check counts against: the account itself when the login names one (by name or e-mail, in
 * any case, so `Carol`, `carol` and her e-mail are one subject), else the text typed; and the address.
 */
export function loginSubjects(found: AccountLogin | null, login: string, address: string): string[] {
  return [found === null ? `login:${login.toLowerCase()}` : `account:${found.account.id}`, `address:${address}`];
}

/**
 * The account `login` names when `password` is its password, else null (a wrong password is counted).
 * Throws 429 when the account or the address is over its limit, before any hash is computed.
 */
export async function checkPassword(deps: AdminDeps, address: string, login: string, password: string): Promise<AccountLogin | null> {
  const found = await deps.store.findLogin(login);
  const subjects = loginSubjects(found, login, address);
  const wait = deps.loginLimiter.retryAfter(subjects, Date.now());
  if (wait > 0) {
    deps.metrics.recordLogin('limited');
    throw tooManyAttempts('sign-in attempts', wait);
  }
  // Until this check is decided it counts against the limit, so a burst of guesses cannot all pass it.
  deps.loginLimiter.begin(subjects);
  try {
    // Unknown names are checked against a decoy hash, so timing does not reveal which names exist.
    const matches = await verifyPassword(password, found?.passwordHash ?? (await decoyHash()));
    if (found === null || found.passwordHash === null || !matches) {
      deps.loginLimiter.fail(subjects, Date.now());
      return null;
    }
    deps.loginLimiter.succeed(subjects, Date.now());
    return found;
  } finally {
    deps.loginLimiter.end(subjects);
  }
}
