/**
 * A change that lets a session spend the account's money without it in the room (auto-recharge turned
 * on or raised: the saved card charged off-session) asks for a fresh proof that the owner is there: a
 * current two-factor code when the account has a second factor (a stolen session and a phished
 * password are then not enough), else the password. Both are checked under the login limiter, as at
 * sign-in; a wrong one is a 400 naming its field, a missing code the login's own `two_factor_required`.
 */
import type { Account } from '../store/store';
import { ApiError, invalid } from './api-error';
import type { AdminDeps } from './context';
import { optionalString } from './fields';
import type { JsonObject } from './json-body';
import { checkPassword } from './password-check';
import { hasSecondFactor, requireCurrentCode } from './second-factor';

/** Password inputs are read untrimmed (spaces can be part of one), at most this long. */
const MAX_PASSWORD_CHARS = 1024;

export async function requirePasswordOrCode(deps: AdminDeps, address: string, account: Account, body: JsonObject, why: string): Promise<void> {
  const password = typeof body.password === 'string' && body.password !== '' ? body.password.slice(0, MAX_PASSWORD_CHARS) : null;
  if (password !== null) {
    // Given, it must be right, even where a code is what is asked for.
    const found = await checkPassword(deps, address, account.name, password);
    if (found?.account.id !== account.id) throw invalid('password', 'This is not your password.');
  }
  if (await hasSecondFactor(deps, account.id)) {
    const code = optionalString(body, 'code', 'The code', 64);
    if (code === null) throw new ApiError('two_factor_required', `${why} needs the 6-digit code from your authenticator app, or a recovery code.`, 'code');
    await requireCurrentCode(deps, address, account, code);
    return;
  }
  if (password === null) throw invalid('password', `${why} needs your password.`);
}
