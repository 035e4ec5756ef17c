/**
 * `tollgate key …`: create, list, limit and revoke API keys. Written against `Store` and an output function,
 * so tests call them without spawning a process. The full key is printed once, by `key create`, as
 * the last line of its output (scripts read it with `tail -n 1`); nothing else ever prints it.
 */
import { issueApiKey, keyStatus } from '../auth/issue-key';
import { isValidKeyName, printableKeyName } from '../auth/key-name';
import { formatUnits } from '../billing/money';
import type { ApiKeyRecord, Store } from '../store/store';
import { formatModels, formatSpendLimit, parseModelList, parseSpendLimit } from './key-limits';
import { requireAccount, requireKey } from './lookup';
import { formatTable, formatTime } from './table';

/**
 * `key create --account NAME [--name LABEL] [--spend-limit AMOUNT] [--models a,b]`: creates a key and
 * prints what it is, then the key itself as the last line. Returns the plaintext key and its record.
 */
export async function createKeyCommand(
  store: Store,
  input: { account: string; name?: string | null; spendLimit?: string | null; models?: string | null },
  out: (line: string) => void,
): Promise<{ key: string; record: ApiKeyRecord }> {
  if (input.name != null && !isValidKeyName(input.name)) {
    throw new Error('invalid key name: use 1-100 printable characters on one line');
  }
  const spendLimit = input.spendLimit == null ? null : parseSpendLimit(input.spendLimit);
  const models = input.models == null ? null : parseModelList(input.models);
  const account = await requireAccount(store, input.account);
  const { key, record } = await issueApiKey(store, { accountId: account.id, name: input.name ?? null, spendLimit, models });
  const label = record.name === null ? '' : ` "${record.name}"`;
  out(`created key ${record.id}${label} for account ${account.name} (spend limit ${formatSpendLimit(record)}, models ${formatModels(record)})`);
  out('This is the only time the key is shown; store it now:');
  out(key);
  return { key, record };
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
    key.name === null ? '-' : printableKeyName(key.name),
    `${key.prefix}…${key.last4}`,
    formatTime(key.createdAt),
    keyStatus(key, now.getTime()),
  ]);
  for (const line of formatTable([header, ...rows])) out(line);
  return keys;
}

/**
 * `key limits ID [--spend-limit AMOUNT|none] [--models LIST|all]`: changes what the key may spend and
 * which models it may use; a flag left out keeps that setting. Prints the key's limits afterwards.
 */
export async function setKeyLimitsCommand(
  store: Store,
  input: { id: string; spendLimit?: string; models?: string },
  out: (line: string) => void,
): Promise<ApiKeyRecord> {
  if (input.spendLimit === undefined && input.models === undefined) {
    throw new Error('nothing to change: give --spend-limit AMOUNT|none and/or --models LIST|all');
  }
  const key = await requireKey(store, input.id);
  const spendLimit = input.spendLimit === undefined ? key.spendLimit : parseSpendLimit(input.spendLimit);
  const models = input.models === undefined ? key.models : parseModelList(input.models);
  if (!(await store.setKeyLimits(key.id, { spendLimit, models }))) throw new Error(`no key with id "${key.id}"`);
  const updated = { ...key, spendLimit, models };
  out(`key ${key.id}: spend limit ${formatSpendLimit(updated)} (spent ${formatUnits(key.spent)}), models ${formatModels(updated)}`);
  return updated;
}

/** `key revoke ID`: revokes the key and prints `revoked <id>`; an unknown id is an error. */
export async function revokeKeyCommand(store: Store, id: string, out: (line: string) => void): Promise<void> {
  if (!(await store.revokeKey(id))) throw new Error(`no key with id "${id}"`);
  out(`revoked ${id}`);
}
