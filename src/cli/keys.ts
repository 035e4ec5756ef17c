/**
 * `tollgate key …`: create, list, limit and revoke API keys. Written against `Store` and an output function,
 * so tests call them without spawning a process. The full key is printed once, by `key create`, as
 * the last line of its output (scripts read it with `tail -n 1`); nothing else ever prints it.
 */
import { issueApiKey, keyStatus } from '../auth/issue-key';
import { isValidKeyName, printableKeyName } from '../auth/key-name';
import { formatUnits } from '../billing/money';
import type { ApiKeyRecord, Store } from '../store/store';
import { UsageError } from './args';
import { printJson } from './json';
import {
  applyRateLimitFlags,
  formatModels,
  formatRateLimits,
  formatSpendLimit,
  hasRateLimitFlags,
  parseModelList,
  parseSpendLimit,
  type RateLimitFlags,
} from './key-limits';
import { requireAccount, requireKey } from './lookup';
import { formatTable, formatTime } from './table';

/**
 * `key create --account NAME [--name LABEL] [--spend-limit AMOUNT] [--models a,b]`: creates a key and
 * prints what it is, then the key itself as the last line. Returns the plaintext key and its record.
 */
export async function createKeyCommand(
  store: Store,
  input: { account: string; name?: string | null; spendLimit?: string | null; models?: string | null; rateLimits?: RateLimitFlags },
  out: (line: string) => void,
): Promise<{ key: string; record: ApiKeyRecord }> {
  if (input.name != null && !isValidKeyName(input.name)) {
    throw new Error('invalid key name: use 1-100 printable characters on one line');
  }
  const spendLimit = input.spendLimit == null ? null : parseSpendLimit(input.spendLimit);
  const models = input.models == null ? null : parseModelList(input.models);
  const rateLimits = applyRateLimitFlags(null, input.rateLimits ?? {});
  const account = await requireAccount(store, input.account);
  const { key, record } = await issueApiKey(store, { accountId: account.id, name: input.name ?? null, spendLimit, models, rateLimits });
  const label = record.name === null ? '' : ` "${record.name}"`;
  out(
    `created key ${record.id}${label} for account ${account.name} (spend limit ${formatSpendLimit(record)}, models ${formatModels(record)}, rate limits ${formatRateLimits(record)})`,
  );
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
  json = false,
): Promise<ApiKeyRecord[]> {
  const account = filter.account === undefined ? null : await requireAccount(store, filter.account);
  const keys = await store.listKeys(account === null ? {} : { accountId: account.id });
  if (json) {
    printJson(keys.map((key) => ({ ...key, status: keyStatus(key, now.getTime()) })), out);
    return keys;
  }
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
 * `key limits ID [--spend-limit AMOUNT|none] [--models LIST|all] [--rpm|--tpm|--concurrency N|none]`:
 * changes what the key may spend, which models it may use and how fast; a flag left out keeps that setting. Prints the key's limits afterwards.
 */
export async function setKeyLimitsCommand(
  store: Store,
  input: { id: string; spendLimit?: string; models?: string; rateLimits?: RateLimitFlags },
  out: (line: string) => void,
): Promise<ApiKeyRecord> {
  const rateFlags = input.rateLimits ?? {};
  if (input.spendLimit === undefined && input.models === undefined && !hasRateLimitFlags(rateFlags)) {
    throw new UsageError('nothing to change: give --spend-limit AMOUNT|none, --models LIST|all, or --rpm/--tpm/--concurrency N|none');
  }
  const key = await requireKey(store, input.id);
  const spendLimit = input.spendLimit === undefined ? key.spendLimit : parseSpendLimit(input.spendLimit);
  const models = input.models === undefined ? key.models : parseModelList(input.models);
  const rateLimits = applyRateLimitFlags(key.rateLimits, rateFlags);
  if (!(await store.setKeyLimits(key.id, { spendLimit, models, rateLimits }))) throw new Error(`no key with id "${key.id}"`);
  const updated = { ...key, spendLimit, models, rateLimits };
  out(
    `key ${key.id}: spend limit ${formatSpendLimit(updated)} (spent ${formatUnits(key.spent)}), models ${formatModels(updated)}, rate limits ${formatRateLimits(updated)}`,
  );
  return updated;
}

/** `key revoke ID`: revokes the key and prints `revoked <id>`; an unknown id is an error. */
export async function revokeKeyCommand(store: Store, id: string, out: (line: string) => void): Promise<void> {
  if (!(await store.revokeKey(id))) throw new Error(`no key with id "${id}"`);
  out(`revoked ${id}`);
}
