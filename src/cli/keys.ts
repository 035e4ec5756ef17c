/**
 * `tollgate key …`: create, list and revoke API keys. Written against `Store` and an output function,
 * so tests call them without spawning a process. The full key is printed once, by `key create`, as
 * the last line of its output (scripts read it with `tail -n 1`); nothing else ever prints it.
 */
import { issueApiKey, keyStatus } from '../auth/issue-key';
import type { Account, ApiKeyRecord, Store } from '../store/store';

/** Key labels are shown in one table cell: printable, one line, at most 100 characters. */
const KEY_NAME_PATTERN = /^[^\u0000-\u001f\u007f]{1,100}$/;

async function requireAccount(store: Store, name: string): Promise<Account> {
  const account = await store.findAccountByName(name);
  if (account === null) throw new Error(`no account named "${name}"`);
  return account;
}

/**
 * `key create --account NAME [--name LABEL]`: creates a key and prints what it is, then the key itself
 * as the last line. Returns the plaintext key and its record.
 */
export async function createKeyCommand(
  store: Store,
  input: { account: string; name?: string | null },
  out: (line: string) => void,
): Promise<{ key: string; record: ApiKeyRecord }> {
  if (input.name != null && !KEY_NAME_PATTERN.test(input.name)) {
    throw new Error('invalid key name: use 1-100 printable characters on one line');
  }
  const account = await requireAccount(store, input.account);
  const { key, record } = await issueApiKey(store, { accountId: account.id, name: input.name ?? null });
  const label = record.name === null ? '' : ` "${record.name}"`;
  out(`created key ${record.id}${label} for account ${account.name}`);
  out('This is the only time the key is shown; store it now:');
  out(key);
  return { key, record };
}

/** Formats rows as left-aligned columns separated by two spaces. */
function formatTable(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column])).join('  ').trimEnd());
}

/** `2025-11-22 06:23Z`: minutes are enough to tell keys apart, and UTC reads the same on every host. */
function formatTime(date: Date): string {
  return `${date.toISOString().slice(0, 16).replace('T', ' ')}Z`;
}

/**
 * `key list [--account NAME]`: prints one row per key with its display prefix and last four characters
 * only. The ACCOUNT column shows the name when filtering by account, else the account id, because
 * `Store` has no lookup of accounts by id.
 */
export async function listKeysCommand(
  store: Store,
  filter: { account?: string },
  out: (line: string) => void,
  now: Date = new Date(),
): Promise<ApiKeyRecord[]> {
  const account = filter.account === undefined ? null : await requireAccount(store, filter.account);
  const keys = await store.listKeys(account === null ? {} : { accountId: account.id });
  if (keys.length === 0) {
    out(account === null ? 'no keys' : `no keys for account ${account.name}`);
    return keys;
  }
  const header = ['ID', 'ACCOUNT', 'NAME', 'KEY', 'CREATED', 'STATUS'];
  const rows = keys.map((key) => [
    key.id,
    account?.name ?? key.accountId,
    key.name ?? '-',
    `${key.prefix}…${key.last4}`,
    formatTime(key.createdAt),
    keyStatus(key, now.getTime()),
  ]);
  for (const line of formatTable([header, ...rows])) out(line);
  return keys;
}

/** `key revoke ID`: revokes the key and prints `revoked <id>`; an unknown id is an error. */
export async function revokeKeyCommand(store: Store, id: string, out: (line: string) => void): Promise<void> {
  if (!(await store.revokeKey(id))) throw new Error(`no key with id "${id}"`);
  out(`revoked ${id}`);
}
