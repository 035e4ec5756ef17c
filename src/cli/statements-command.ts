/**
 * `tollgate statements issue --month YYYY-MM | list --account NAME`: issuing a closed month's
 * statement of every account (and any earlier month one lacks), and listing one account's.
 */
import { parseArgs } from 'node:util';
import { readDocument } from '../statements/document';
import { issueClosedMonths, issueMonthForAll, MonthOpenError } from '../statements/issue';
import { parseMonth } from '../statements/month';
import type { StoredStatement } from '../store/statements';
import { expectPositionals, parse, UsageError } from './args';
import { EXIT_ERROR, EXIT_OK, withStore, type CliIo } from './context';
import { requireAccount } from './lookup';
import { formatTable, formatTime } from './table';

const USAGE = 'usage: tollgate statements issue --month YYYY-MM | tollgate statements list --account NAME [--json]';

function rowsOf(statements: readonly StoredStatement[], names: ReadonlyMap<string, string>): string[] {
  const rows = statements.map((statement) => {
    const document = readDocument(statement);
    return [statement.number, statement.month, names.get(statement.accountId) ?? statement.accountId, document.opening, document.closing, document.currency, formatTime(statement.issuedAt)];
  });
  return formatTable([['NUMBER', 'MONTH', 'ACCOUNT', 'OPENING', 'CLOSING', 'CURRENCY', 'ISSUED'], ...rows]);
}

export async function statementsCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(() =>
    parseArgs({ args, allowPositionals: true, options: { config: { type: 'string' }, month: { type: 'string' }, account: { type: 'string' }, json: { type: 'boolean' } } }),
  );
  const action = positionals[0];
  if (action !== 'issue' && action !== 'list') throw new UsageError(USAGE);
  expectPositionals(positionals.slice(1), 0, `statements ${action}`);
  if (action === 'issue' && values.month === undefined) throw new UsageError(USAGE);
  if (action === 'list' && values.account === undefined) throw new UsageError(USAGE);
  const month = values.month === undefined ? null : parseMonth(values.month);
  if (values.month !== undefined && month === null) throw new UsageError(`--month "${values.month}" is not a month such as 2026-11`);
  return withStore(values.config, io, async (store, config) => {
    const names = new Map((await store.listAccounts()).map((account) => [account.id, account.name]));
    let statements: StoredStatement[];
    try {
      if (action === 'issue') statements = await issueMonthForAll(store, config, month!, new Date());
      else statements = await issueClosedMonths(store, config, await requireAccount(store, values.account!), new Date());
    } catch (error) {
      if (!(error instanceof MonthOpenError)) throw error;
      io.err(`tollgate: ${error.message}: a month closes an hour after it ends (UTC)`);
      return EXIT_ERROR;
    }
    if (values.json === true) io.out(JSON.stringify(statements.map((statement) => ({ id: statement.id, hash: statement.hash, ...readDocument(statement) })), null, 2));
    else if (statements.length === 0) io.out('No statements.');
    else for (const line of rowsOf(statements, names)) io.out(line);
    return EXIT_OK;
  });
}
