/**
 * `tollgate account password|token`, and the password part of `account create`: what an operator
 * needs to let a person into the console, or a script into `/api`, without the console itself.
 */
import { generatePassword, hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../auth/passwords';
import { DEFAULT_TOKEN_DAYS, hashSecret, newManagementToken } from '../admin/secrets';
import type { AccessStore, Account, SessionRecord } from '../store/access-store';
import { requireAccount } from './lookup';
import { UsageError } from './args';


/** A password given on standard input (trailing newline dropped), checked like the console does. */
export function passwordFromStdin(text: string): string {
  const password = text.replace(/\r?\n$/, '');
  if (password.length < MIN_PASSWORD_LENGTH) throw new Error(`the password must have at least ${MIN_PASSWORD_LENGTH} characters`);
  if (password.length > MAX_PASSWORD_LENGTH) throw new Error(`the password must have at most ${MAX_PASSWORD_LENGTH} characters`);
  return password;
}

/** The hash of the password to set: the one given, else a generated one, which is printed once. */
export async function passwordHashFor(given: string | undefined, out: (line: string) => void): Promise<string> {
  if (given !== undefined) return hashPassword(given);
  const password = generatePassword();
  out(`console password: ${password}   (shown once)`);
  return hashPassword(password);
}

/** Sets the password and ends every console session and management token of the account. */
export async function setPasswordCommand(
  store: AccessStore,
  input: { name: string; password?: string },
  out: (line: string) => void,
): Promise<{ account: Account; ended: number }> {
  const account = await requireAccount(store, input.name);
  await store.setPassword(account.id, await passwordHashFor(input.password, out));
  const ended = await store.endSessions(account.id);
  out(`set the console password of ${account.name}; ended ${ended} console sessions and tokens`);
  return { account, ended };
}

/**
 * `account reset-2fa NAME`: the way back in for someone who lost their authenticator: removes the
 * account's second factor and recovery codes and ends its sessions and tokens. They sign in with the
 * password and, where `console.require_2fa` says so, enrol again.
 */
export async function resetSecondFactorCommand(store: AccessStore, name: string, out: (line: string) => void): Promise<{ account: Account; removed: boolean; ended: number }> {
  const account = await requireAccount(store, name);
  const removed = await store.removeSecondFactor(account.id);
  const ended = await store.endSessions(account.id);
  out(removed ? `reset two-factor sign-in of ${account.name}; ended ${ended} console sessions and tokens` : `${account.name} had no two-factor sign-in; nothing to reset`);
  return { account, removed, ended };
}

export async function createTokenCommand(
  store: AccessStore,
  input: { name: string; label: string | null; days?: string },
  out: (line: string) => void,
): Promise<{ token: string; record: SessionRecord }> {
  const days = input.days === undefined ? DEFAULT_TOKEN_DAYS : Number(input.days);
  if (!Number.isInteger(days) || days < 1 || days > 3660) throw new UsageError(`invalid --days "${input.days}": a whole number of days from 1 to 3660`);
  const account = await requireAccount(store, input.name);
  const token = newManagementToken();
  const expiresAt = new Date(Date.now() + days * 86_400_000);
  const record = await store.createSession({ accountId: account.id, hash: hashSecret(token), kind: 'token', name: input.label, expiresAt, userAgent: 'tollgate CLI' });
  out(`management token ${record.id} of ${account.name}, expires ${expiresAt.toISOString()} (shown once; send it as "Authorization: Bearer …" to /api):`);
  out(token);
  return { token, record };
}
