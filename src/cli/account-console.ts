/**
 * `tollgate account password|token`, and the password part of `account create`: what an operator
 * needs to let a person into the console, or a script into `/api`, without the console itself.
 */
import { generatePassword, hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../auth/passwords';
import { hashSecret, newManagementToken } from '../admin/secrets';
import type { Account, SessionRecord, Store } from '../store/store';
import { requireAccount } from './lookup';

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

export async function setPasswordCommand(store: Store, input: { name: string; password?: string }, out: (line: string) => void): Promise<Account> {
  const account = await requireAccount(store, input.name);
  await store.setPassword(account.id, await passwordHashFor(input.password, out));
  out(`set the console password of ${account.name}`);
  return account;
}

export async function createTokenCommand(
  store: Store,
  input: { name: string; label: string | null },
  out: (line: string) => void,
): Promise<{ token: string; record: SessionRecord }> {
  const account = await requireAccount(store, input.name);
  const token = newManagementToken();
  const record = await store.createSession({ accountId: account.id, hash: hashSecret(token), kind: 'token', name: input.label, expiresAt: null });
  out(`management token ${record.id} of ${account.name} (shown once; send it as "Authorization: Bearer …" to /api):`);
  out(token);
  return { token, record };
}
