/** `tollgate ledger verify`: argument handling and the exit code; the check is in ledger.ts. */
import { parseArgs } from 'node:util';
import { expectPositionals, parse, UsageError } from './args';
import type { CliIo } from './context';
import { EXIT_ERROR, EXIT_OK, withStore } from './context';
import { verifyLedgerCommand } from './ledger';

export async function ledgerCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(() =>
    parseArgs({ args, allowPositionals: true, options: { config: { type: 'string' } } }),
  );
  if (positionals[0] !== 'verify') throw new UsageError('usage: tollgate ledger verify');
  expectPositionals(positionals.slice(1), 0, 'ledger verify');
  const { drifted } = await withStore(values.config, io, (store) => verifyLedgerCommand(store, io.out));
  return drifted === 0 ? EXIT_OK : EXIT_ERROR;
}
