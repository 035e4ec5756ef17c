/**
 * `tollgate key …`: create, list, limit and revoke API keys. Written against `Store` and an output function,
 * so tests call them without spawning a process. The full key is printed once, by `key create`, as
 * the last line of its output (scripts read it with `tail -n 1`); nothing else ever prints it.
 */
import { issueApiKey, keyStatus } from '../auth/issue-key';
import { isValidKeyName, printableKeyName } from '../auth/key-name';
import { formatUnits } from '../billing/money';
import type { AccessStore, ApiKeyRecord, KeyRateLimits, OperatorLimits } from '../store/access-store';
import { UsageError } from './args';
import { printJson } from './json';
import {
  applyRateLimitFlags,
  formatModels,
  formatRateLimits,
  formatSpendLimit,
  hasRateLimitFlags,
  parseModelList,
  formatNetworks,
  parseNetworkList,
  parseSpendLimit,
  type RateLimitFlags,
} from './key-limits';
import { operatorChange } from '../auth/key-limits';
import { requireAccount, requireKey } from './lookup';
import { formatTable, formatTime } from './table';

/** The limits as an operator's: only those set, or null when none is. */
function operatorLimitsOf(limits: {
  spendLimit: bigint | null;
  models: readonly string[] | null;
  rateLimits: KeyRateLimits | null;
  allowedNetworks: readonly string[] | null;
}): OperatorLimits | null {
  const operator: OperatorLimits = {
    ...(limits.spendLimit === null ? {} : { spendLimit: limits.spendLimit }),
    ...(limits.models === null ? {} : { models: limits.models }),
    ...(limits.rateLimits === null ? {} : { rateLimits: limits.rateLimits }),
    ...(limits.allowedNetworks === null ? {} : { allowedNetworks: limits.allowedNetworks }),
  };
  return Object.keys(operator).length === 0 ? null : operator;
}

/**
 * `key create --account NAME [--name LABEL] [--spend-limit AMOUNT] [--models a,b] [--allowed-networks …]`:
 * creates a key and prints what it is, then the key itself as the last line. The limits are the
 * operator's: the key's owner can tighten them in the console, never loosen or clear them. Returns
 * the plaintext key and its record.
 */
export async function createKeyCommand(
  store: AccessStore,
  input: {
    account: string;
    name?: string | null;
    spendLimit?: string | null;
    models?: string | null;
    rateLimits?: RateLimitFlags;
    allowedNetworks?: string | null;
  },
  out: (line: string) => void,
): Promise<{ key: string; record: ApiKeyRecord }> {
  if (input.name != null && !isValidKeyName(input.name)) {
    throw new Error('invalid key name: use 1-100 printable characters on one line');
  }
  const spendLimit = input.spendLimit == null ? null : parseSpendLimit(input.spendLimit);
  const models = input.models == null ? null : parseModelList(input.models);
  const rateLimits = applyRateLimitFlags(null, input.rateLimits ?? {});
  const allowedNetworks = input.allowedNetworks == null ? null : parseNetworkList(input.allowedNetworks);
  const account = await requireAccount(store, input.account);
  const operatorLimits = operatorLimitsOf({ spendLimit, models, rateLimits, allowedNetworks });
  const { key, record } = await issueApiKey(store, { accountId: account.id, name: input.name ?? null, spendLimit, models, rateLimits, operatorLimits });
  const label = record.name === null ? '' : ` "${record.name}"`;
  out(
    `created key ${record.id}${label} for account ${account.name} (spend limit ${formatSpendLimit(record)}, models ${formatModels(record)}, rate limits ${formatRateLimits(record)}${allowedNetworks === null ? '' : `, allowed networks ${formatNetworks(allowedNetworks)}`})`,
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
  store: AccessStore,
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
 * `key limits ID [--spend-limit AMOUNT|none] [--models LIST|all] [--rpm|--tpm|--concurrency N|none]
 * [--allowed-networks LIST|any]`: changes the operator's limits on the key; a flag left out keeps
 * that limit. What is enforced is the tighter of these and the owner's own. Prints the key's limits
 * afterwards.
 */
export async function setKeyLimitsCommand(
  store: AccessStore,
  input: { id: string; spendLimit?: string; models?: string; rateLimits?: RateLimitFlags; allowedNetworks?: string },
  out: (line: string) => void,
): Promise<ApiKeyRecord> {
  const rateFlags = input.rateLimits ?? {};
  if (input.spendLimit === undefined && input.models === undefined && input.allowedNetworks === undefined && !hasRateLimitFlags(rateFlags)) {
    throw new UsageError('nothing to change: give --spend-limit AMOUNT|none, --models LIST|all, --rpm/--tpm/--concurrency N|none or --allowed-networks LIST|any');
  }
  const key = await requireKey(store, input.id);
  const current = key.operatorLimits ?? {};
  const operator = operatorLimitsOf({
    spendLimit: input.spendLimit === undefined ? (current.spendLimit ?? null) : parseSpendLimit(input.spendLimit),
    models: input.models === undefined ? (current.models ?? null) : parseModelList(input.models),
    rateLimits: applyRateLimitFlags(current.rateLimits ?? null, rateFlags),
    allowedNetworks: input.allowedNetworks === undefined ? (current.allowedNetworks ?? null) : parseNetworkList(input.allowedNetworks),
  });
  const limits = operatorChange(key, operator);
  if (!(await store.setKeyLimits(key.id, limits))) throw new Error(`no key with id "${key.id}"`);
  const updated = await requireKey(store, key.id);
  out(
    `key ${key.id}: spend limit ${formatSpendLimit(updated)} (spent ${formatUnits(key.spent)}), models ${formatModels(updated)}, rate limits ${formatRateLimits(updated)}${operator?.allowedNetworks === undefined ? '' : `, allowed networks ${formatNetworks(operator.allowedNetworks)}`}`,
  );
  return updated;
}

/** `key revoke ID`: revokes the key and prints `revoked <id>`; an unknown id is an error. */
export async function revokeKeyCommand(store: AccessStore, id: string, out: (line: string) => void): Promise<void> {
  if (!(await store.revokeKey(id))) throw new Error(`no key with id "${id}"`);
  out(`revoked ${id}`);
}
