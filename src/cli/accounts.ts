/** `tollgate account …`: account commands, written against `Store` so tests call them without a process. */
import type { AccessStore, Account } from '../store/access-store';
import { passwordHashFor } from './account-console';

/**
 * What an account name may be: a letter or digit, then letters, digits and `._@-`, at most 64 in all.
 * Names appear in tables and on command lines, so spaces and control characters are kept out.
 */
const ACCOUNT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

/** Throws a one-line Error unless `name` is a valid account name. */
function checkAccountName(name: string): void {
  if (!ACCOUNT_NAME_PATTERN.test(name)) {
    throw new Error(`invalid account name "${name}": use 1-64 letters, digits and ._@- (starting with a letter or digit)`);
  }
}

/**
 * `account create NAME [--admin] [--email ADDRESS]`: creates the account with a console password (the
 * one given, else a generated one printed once) and prints a line describing it.
 */
export async function createAccountCommand(
  store: AccessStore,
  input: { name: string; admin: boolean; email?: string; password?: string },
  out: (line: string) => void,
): Promise<Account> {
  checkAccountName(input.name);
  // Asked first for a clear message; the store's unique index still guards against a race.
  if ((await store.findAccountByName(input.name)) !== null) {
    throw new Error(`an account named "${input.name}" already exists`);
  }
  const email = input.email?.trim().toLowerCase() || null;
  if (email !== null && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) throw new Error(`"${input.email}" is not an e-mail address`);
  const passwordHash = await passwordHashFor(input.password, out);
  const account = await store.createAccount({ name: input.name, role: input.admin ? 'admin' : 'user', email, passwordHash });
  out(`created account ${account.name} (${account.id}, role ${account.role})`);
  return account;
}
