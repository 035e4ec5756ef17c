/** `tollgate audit list`: argument handling; the work is in audit.ts. */
import { parseArgs } from 'node:util';
import { expectPositionals, parse, UsageError } from './args';
import { listAuditCommand } from './audit';
import { EXIT_OK, withStore, type CliIo } from './context';

export async function auditCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(() =>
    parseArgs({
      args,
      allowPositionals: true,
      options: {
        config: { type: 'string' },
        actor: { type: 'string' },
        target: { type: 'string' },
        action: { type: 'string' },
        since: { type: 'string' },
        until: { type: 'string' },
        limit: { type: 'string' },
        csv: { type: 'boolean' },
      },
    }),
  );
  const [action, ...rest] = positionals;
  if (action !== 'list') throw new UsageError('usage: tollgate audit list …; run "tollgate help"');
  expectPositionals(rest, 0, 'audit list [--actor A] [--target ID] [--action ACTION] [--since DAY] [--until DAY] [--limit N] [--csv]');
  const input = { ...values, csv: values.csv === true };
  await withStore(values.config, io, (store) => listAuditCommand(store, input, io.out));
  return EXIT_OK;
}
