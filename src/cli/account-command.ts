/** `tollgate account create|credit|show`: argument handling; the work is in accounts.ts, account-*.ts. */
import { parseArgs } from 'node:util';
import { creditAccountCommand } from './account-credit';
import { showAccountCommand } from './account-show';
import { createAccountCommand } from './accounts';
import { expectPositionals, parse, UsageError } from './args';
import type { CliIo } from './context';
import { cliActor, EXIT_OK, withBook, withStore } from './context';

export async function accountCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(() =>
    parseArgs({
      args,
      allowPositionals: true,
      options: { config: { type: 'string' }, admin: { type: 'boolean' }, note: { type: 'string' } },
    }),
  );
  const [action, ...rest] = positionals;
  switch (action) {
    case 'create': {
      expectPositionals(rest, 1, 'account create NAME [--admin]');
      const name = rest[0];
      await withStore(values.config, io, (store) => createAccountCommand(store, { name, admin: values.admin === true }, io.out));
      return EXIT_OK;
    }
    case 'credit': {
      const usage = 'account credit NAME AMOUNT --note TEXT';
      expectPositionals(rest, 2, usage);
      if (values.note === undefined) throw new UsageError(`--note is required; usage: tollgate ${usage}`);
      const input = { account: rest[0], amount: rest[1], note: values.note, actor: cliActor(io) };
      await withBook(values.config, io, (store, book) => creditAccountCommand(store, book, input, io.out));
      return EXIT_OK;
    }
    case 'show':
      expectPositionals(rest, 1, 'account show NAME');
      await withBook(values.config, io, (store, book) => showAccountCommand(store, book, rest[0], io.out));
      return EXIT_OK;
    default:
      throw new UsageError('usage: tollgate account create|credit|show …; run "tollgate help"');
  }
}
