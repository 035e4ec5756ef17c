/**
 * The administrators' account list: searched, sorted and paged in the process. Accounts are few
 * next to charges (thousands, not millions), so one read of them all and a sort here is cheaper than
 * a query per dialect; only the page shown asks the book for live balances.
 */
import type { AccountSummary } from '../store/store';
import { invalid } from './api-error';
import { single, type QueryValue } from './routes/query';

const ACCOUNT_SORTS = ['name', 'balance', 'created', 'last_request'] as const;
type AccountSort = (typeof ACCOUNT_SORTS)[number];

export interface AccountQuery {
  /** Part of the name or e-mail, any case; empty: every account. */
  readonly search: string;
  readonly sort: AccountSort;
  readonly descending: boolean;
}

export function accountQuery(query: Readonly<Record<string, QueryValue>>): AccountQuery {
  const sort = single(query.sort, 'sort') ?? 'name';
  if (!(ACCOUNT_SORTS as readonly string[]).includes(sort)) throw invalid('sort', `sort is one of ${ACCOUNT_SORTS.join(', ')}.`);
  const order = single(query.order, 'order') ?? (sort === 'name' ? 'asc' : 'desc');
  if (order !== 'asc' && order !== 'desc') throw invalid('order', 'order is asc or desc.');
  return { search: (single(query.q, 'q') ?? '').trim().toLowerCase(), sort: sort as AccountSort, descending: order === 'desc' };
}

/** The accounts that match, in the order asked; ties by name, so pages never shuffle. */
export function listAccounts(accounts: readonly AccountSummary[], lastRequests: ReadonlyMap<string, Date>, query: AccountQuery): AccountSummary[] {
  const matching = query.search === '' ? [...accounts] : accounts.filter((account) => `${account.name}\n${account.email ?? ''}`.toLowerCase().includes(query.search));
  const key = (account: AccountSummary): number | bigint | string => {
    switch (query.sort) {
      case 'balance':
        return account.balance;
      case 'created':
        return account.createdAt.getTime();
      case 'last_request':
        // Never: before every date.
        return lastRequests.get(account.id)?.getTime() ?? -1;
      case 'name':
        return account.name.toLowerCase();
    }
  };
  return matching.sort((a, b) => {
    const [left, right] = [key(a), key(b)];
    const order = left < right ? -1 : left > right ? 1 : 0;
    return (query.descending ? -order : order) || a.name.localeCompare(b.name);
  });
}
