/**
 * Issuing statements: an account's closed months, each once, oldest first so every statement's
 * opening follows the one before it. Called lazily when an account (or an administrator) asks for its
 * statements, and by `tollgate statements issue --month` for every account.
 */
import type { GatewayConfig } from '../config/types';
import { balanceCurrency } from '../money/currency';
import type { Account, Store } from '../store/store';
import type { StoredStatement } from '../store/statements';
import { composeDocument } from './document';
import { closedMonthsSince, isClosed, type StatementMonth } from './month';

type StatementsDeps = Pick<Store, 'statements' | 'listAccounts'>;

/** A month asked for that has not closed yet: nothing is issued for it. */
export class MonthOpenError extends Error {}

async function issueOne(store: StatementsDeps, config: GatewayConfig, account: Pick<Account, 'id' | 'name'>, month: StatementMonth, now: Date): Promise<StoredStatement> {
  const settings = config.plugins.billing.statements;
  const context = { account, month, issuer: settings, numberPrefix: settings.number_prefix, currency: balanceCurrency(config), issuedAt: now };
  return store.statements.issue({
    accountId: account.id,
    month: month.month,
    year: month.year,
    start: month.start,
    end: month.end,
    issuedAt: now,
    compose: (ledger, previous, sequence) => composeDocument(context, ledger, previous, sequence),
  });
}

/**
 * Every closed month of the account issued (those issued before are read back), newest first: from the
 * month it was made in, or of its first ledger entry if earlier, up to the last closed month, or
 * `through` when given.
 */
export async function issueClosedMonths(
  store: StatementsDeps,
  config: GatewayConfig,
  account: Pick<Account, 'id' | 'name' | 'createdAt'>,
  now: Date,
  through?: StatementMonth,
): Promise<StoredStatement[]> {
  if (through !== undefined && !isClosed(through, now)) throw new MonthOpenError(`${through.month} has not closed yet`);
  const first = await store.statements.firstEntry(account.id);
  const from = first !== null && first < account.createdAt ? first : account.createdAt;
  const months = closedMonthsSince(from, now).filter((month) => through === undefined || month.start <= through.start);
  const issued = new Map((await store.statements.list(account.id)).map((statement) => [statement.month, statement]));
  for (const month of months) {
    if (!issued.has(month.month)) issued.set(month.month, await issueOne(store, config, account, month, now));
  }
  return [...issued.values()].filter((statement) => through === undefined || statement.month <= through.month).sort((a, b) => b.month.localeCompare(a.month));
}

/** The month's statement of every account (and those before it each lacks), for the CLI. */
export async function issueMonthForAll(store: StatementsDeps, config: GatewayConfig, month: StatementMonth, now: Date): Promise<StoredStatement[]> {
  if (!isClosed(month, now)) throw new MonthOpenError(`${month.month} has not closed yet`);
  const statements: StoredStatement[] = [];
  for (const account of await store.listAccounts()) {
    const issued = await issueClosedMonths(store, config, account, now, month);
    const found = issued.find((statement) => statement.month === month.month);
    if (found !== undefined) statements.push(found);
  }
  return statements;
}
