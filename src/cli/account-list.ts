/** `tollgate account list|disable|enable`: the operator's view of every account, and switching one off. */
import { formatUnits } from '../billing/money';
import type { AccessStore, Account, AccountSummary } from '../store/access-store';
import { printJson } from './json';
import { requireAccount } from './lookup';
import { formatTable, formatTime } from './table';

/** `account list [--json]`: every account with its role, state and stored balance. */
export async function listAccountsCommand(store: AccessStore, out: (line: string) => void, json = false): Promise<AccountSummary[]> {
  const accounts = await store.listAccounts();
  if (json) {
    printJson(accounts, out);
    return accounts;
  }
  if (accounts.length === 0) {
    out('no accounts');
    return accounts;
  }
  const header = ['ID', 'NAME', 'E-MAIL', 'ROLE', 'STATUS', 'BALANCE', 'HELD', 'CREATED'];
  const rows = accounts.map((account) => [
    account.id,
    account.name,
    account.email ?? '-',
    account.role,
    account.disabled ? 'disabled' : 'active',
    formatUnits(account.balance),
    formatUnits(account.held),
    formatTime(account.createdAt),
  ]);
  for (const line of formatTable([header, ...rows])) out(line);
  return accounts;
}

/**
 * `account disable NAME` / `account enable NAME`: a disabled account's keys are refused and its console
 * sessions and management tokens end (for good), on every instance sharing the store; its balance and
 * ledger stay as they are. Returns the account as it was and how many sessions and tokens ended.
 */
export async function setAccountDisabledCommand(
  store: AccessStore,
  name: string,
  disabled: boolean,
  out: (line: string) => void,
): Promise<{ account: Account; ended: number }> {
  const account = await requireAccount(store, name);
  if (!(await store.setAccountDisabled(account.id, disabled))) throw new Error(`no account named "${name}"`);
  const ended = disabled ? await store.endSessions(account.id) : 0;
  out(`${disabled ? 'disabled' : 'enabled'} account ${account.name} (${account.id})${disabled ? `; ended ${ended} console sessions and tokens` : ''}`);
  return { account, ended };
}
