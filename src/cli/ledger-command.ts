/** `tollgate ledger verify | heal`: argument handling and the exit code; the checks are in ledger.ts. */
import { parseArgs } from 'node:util';
import { expectPositionals, parse, UsageError } from './args';
import type { CliIo } from './context';
import { EXIT_ERROR, EXIT_OK, withBook } from './context';
import { healLiveBalances, reportOutboxes, verifyLedgerCommand, verifyLiveBalances } from './ledger';

const USAGE = 'usage: tollgate ledger verify | tollgate ledger heal';

export async function ledgerCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(() =>
    parseArgs({ args, allowPositionals: true, options: { config: { type: 'string' } } }),
  );
  const action = positionals[0];
  if (action !== 'verify' && action !== 'heal') throw new UsageError(USAGE);
  expectPositionals(positionals.slice(1), 0, `ledger ${action}`);
  return withBook(values.config, io, async (store, book, config) => {
    if (action === 'heal') return (await healLiveBalances(store, book, io.out)) ? EXIT_OK : EXIT_ERROR;
    await reportOutboxes(config.plugins.billing.outbox_path, book, io.out);
    const { drifted } = await verifyLedgerCommand(store, io.out);
    const live = await verifyLiveBalances(store, book, io.out);
    return drifted === 0 && live === 0 ? EXIT_OK : EXIT_ERROR;
  });
}
