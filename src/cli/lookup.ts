/** Finding what a command line names, with the one-line error the CLI prints when it is not there. */
import type { AccessStore, Account, ApiKeyRecord } from '../store/access-store';

export async function requireAccount(store: AccessStore, name: string): Promise<Account> {
  const account = await store.findAccountByName(name);
  if (account === null) throw new Error(`no account named "${name}"`);
  return account;
}

/** `Store` has no lookup of one key by id; the key table is small enough to scan from the CLI. */
export async function requireKey(store: AccessStore, id: string): Promise<ApiKeyRecord> {
  const key = (await store.listKeys()).find((candidate) => candidate.id === id);
  if (key === undefined) throw new Error(`no key with id "${id}"`);
  return key;
}
