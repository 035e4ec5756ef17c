/**
 * First run: an empty store gets an admin account, with a console password and one API key, so the
 * operator can log in at all. `TOLLGATE_ADMIN_PASSWORD` sets that password (and resets it on later
 * starts); without it a password is generated and shown once.
 */
import { generatePassword, hashPassword, MIN_PASSWORD_LENGTH, verifyPassword } from './passwords';
import type { AccessStore, Account } from '../store/access-store';
import { issueApiKey } from './issue-key';

/** The account and key names a first run creates. */
export const FIRST_ADMIN_NAME = 'admin';
const FIRST_KEY_NAME = 'first-run';

export interface FirstAdmin {
  readonly account: Account;
  /** The API key's plaintext, to print once. */
  readonly key: string;
  /** The console password when it was generated (to print once); null when the operator gave it. */
  readonly generatedPassword: string | null;
}

/** Throws a one-line Error when the operator's admin password is too weak to accept. */
export function checkAdminPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw new Error(`TOLLGATE_ADMIN_PASSWORD must have at least ${MIN_PASSWORD_LENGTH} characters`);
  }
}

/**
 * When the store has no accounts, creates the `admin` account (role admin, console password
 * `password` or a generated one) with one key named `first-run`; otherwise returns null.
 */
export async function ensureFirstAdmin(store: AccessStore, options: { password?: string } = {}): Promise<FirstAdmin | null> {
  if ((await store.countAccounts()) > 0) return null;

  const generatedPassword = options.password === undefined ? generatePassword() : null;
  const passwordHash = await hashPassword(options.password ?? generatedPassword!);
  let account: Account;
  try {
    account = await store.createAccount({ name: FIRST_ADMIN_NAME, role: 'admin', passwordHash });
  } catch (error) {
    // Another process (a second instance, or the CLI) bootstrapped between our count and our insert.
    // Asked of the store rather than the error's class, so this works for any Store implementation.
    if ((await store.findAccountByName(FIRST_ADMIN_NAME)) !== null) return null;
    throw error;
  }

  const { key } = await issueApiKey(store, { accountId: account.id, name: FIRST_KEY_NAME });
  return { account, key, generatedPassword };
}

/**
 * Makes `password` the console password of the `admin` account, creating that account (role admin)
 * when the store has none by that name. Returns what it did; the hash is only rewritten when the
 * password changed, so restarts with the same variable leave the store alone.
 */
export async function applyAdminPassword(store: AccessStore, password: string): Promise<'created' | 'changed' | 'unchanged'> {
  checkAdminPassword(password);
  const found = await store.findLogin(FIRST_ADMIN_NAME);
  if (found === null) {
    await store.createAccount({ name: FIRST_ADMIN_NAME, role: 'admin', passwordHash: await hashPassword(password) });
    return 'created';
  }
  if (found.passwordHash !== null && (await verifyPassword(password, found.passwordHash))) return 'unchanged';
  await store.setPassword(found.account.id, await hashPassword(password));
  return 'changed';
}
