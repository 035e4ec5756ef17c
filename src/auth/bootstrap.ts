/** First run: an empty store gets an admin account and one key, so the operator can log in at all. */
import type { Account, Store } from '../store/store';
import { issueApiKey } from './issue-key';

/** The account and key names a first run creates. */
export const FIRST_ADMIN_NAME = 'admin';
export const FIRST_KEY_NAME = 'first-run';

/**
 * When the store has no accounts, creates the `admin` account (role admin) with one key named
 * `first-run` and returns the plaintext key, which the caller prints once; otherwise returns null.
 */
export async function ensureFirstAdmin(store: Store): Promise<{ account: Account; key: string } | null> {
  if ((await store.countAccounts()) > 0) return null;

  let account: Account;
  try {
    account = await store.createAccount({ name: FIRST_ADMIN_NAME, role: 'admin' });
  } catch (error) {
    // Another process (a second instance, or the CLI) bootstrapped between our count and our insert.
    // Asked of the store rather than the error's class, so this works for any Store implementation.
    if ((await store.findAccountByName(FIRST_ADMIN_NAME)) !== null) return null;
    throw error;
  }

  const { key } = await issueApiKey(store, { accountId: account.id, name: FIRST_KEY_NAME });
  return { account, key };
}
