/** `tollgate account …`: argument handling; the work is in accounts.ts, account-*.ts. */
import { parseArgs } from 'node:util';
import { createTokenCommand, passwordFromStdin, resetSecondFactorCommand, setPasswordCommand } from './account-console';
import { creditAccountCommand } from './account-credit';
import { listAccountsCommand, setAccountDisabledCommand } from './account-list';
import { showAccountCommand } from './account-show';
import { createAccountCommand } from './accounts';
import { accountBudgetChanged, accountSessionBudgetChanged, credited, disabledChanged, passwordChanged, tokenCreated } from '../audit/states';
import { formatBudget, formatSessionBudget, parseBudgetFlags, parseSessionBudgetFlags } from './budget';
import { auditFromCli } from './audit';
import { requireAccount } from './lookup';
import { expectPositionals, parse, UsageError } from './args';
import type { CliIo } from './context';
import { cliActor, EXIT_OK, withBook, withStore } from './context';

/** With `--password-stdin`, the password read from standard input; otherwise undefined (generate one). */
async function stdinPassword(wanted: boolean | undefined, io: CliIo): Promise<string | undefined> {
  if (wanted !== true) return undefined;
  if (io.readStdin === undefined) throw new UsageError('--password-stdin needs standard input');
  return passwordFromStdin(await io.readStdin());
}

export async function accountCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(() =>
    parseArgs({
      args,
      allowPositionals: true,
      options: {
        config: { type: 'string' },
        admin: { type: 'boolean' },
        note: { type: 'string' },
        email: { type: 'string' },
        name: { type: 'string' },
        'password-stdin': { type: 'boolean' },
        days: { type: 'string' },
        json: { type: 'boolean' },
        amount: { type: 'string' },
        period: { type: 'string' },
        timezone: { type: 'string' },
        none: { type: 'boolean' },
      },
    }),
  );
  const [action, ...rest] = positionals;
  switch (action) {
    case 'create': {
      expectPositionals(rest, 1, 'account create NAME [--admin] [--email ADDRESS] [--password-stdin]');
      const input = { name: rest[0], admin: values.admin === true, email: values.email, password: await stdinPassword(values['password-stdin'], io) };
      await withStore(values.config, io, async (store) => {
        const account = await createAccountCommand(store, input, io.out);
        const after = { name: account.name, email: account.email, role: account.role };
        await auditFromCli(store, io, { action: 'account.create', target: account.id, accountId: account.id, before: null, after });
      });
      return EXIT_OK;
    }
    case 'password': {
      expectPositionals(rest, 1, 'account password NAME [--password-stdin]');
      const input = { name: rest[0], password: await stdinPassword(values['password-stdin'], io) };
      await withStore(values.config, io, async (store) => {
        const { account, ended } = await setPasswordCommand(store, input, io.out);
        await auditFromCli(store, io, passwordChanged(account.id, ended));
      });
      return EXIT_OK;
    }
    case 'reset-2fa': {
      expectPositionals(rest, 1, 'account reset-2fa NAME');
      await withStore(values.config, io, async (store) => {
        const { account, removed, ended } = await resetSecondFactorCommand(store, rest[0], io.out);
        if (removed) {
          await auditFromCli(store, io, { action: 'account.2fa', target: account.id, accountId: account.id, before: { enabled: true }, after: { enabled: false, sessions_ended: ended } });
        }
      });
      return EXIT_OK;
    }
    case 'token': {
      expectPositionals(rest, 1, 'account token NAME [--name LABEL] [--days N]');
      const input = { name: rest[0], label: values.name ?? null, days: values.days };
      await withStore(values.config, io, async (store) => {
        const { record } = await createTokenCommand(store, input, io.out);
        await auditFromCli(store, io, tokenCreated(record));
      });
      return EXIT_OK;
    }
    case 'credit': {
      const usage = 'account credit NAME AMOUNT --note TEXT';
      expectPositionals(rest, 2, usage);
      if (values.note === undefined) throw new UsageError(`--note is required; usage: tollgate ${usage}`);
      const input = { account: rest[0], amount: rest[1], note: values.note, actor: cliActor(io) };
      await withBook(values.config, io, async (store, book) => {
        const before = await book.balance((await requireAccount(store, input.account)).id);
        const credit = await creditAccountCommand(store, book, input, io.out);
        const after = await book.balance(credit.accountId);
        await auditFromCli(store, io, credited('account.credit', credit, before.balance, after.balance));
      });
      return EXIT_OK;
    }
    case 'list':
      expectPositionals(rest, 0, 'account list [--json]');
      await withStore(values.config, io, (store) => listAccountsCommand(store, io.out, values.json === true));
      return EXIT_OK;
    case 'disable':
    case 'enable':
      expectPositionals(rest, 1, `account ${action} NAME`);
      await withStore(values.config, io, async (store) => {
        const { account, ended } = await setAccountDisabledCommand(store, rest[0], action === 'disable', io.out);
        await auditFromCli(store, io, disabledChanged(account, action === 'disable', ended));
      });
      return EXIT_OK;
    case 'budget': {
      const usage = 'account budget NAME --amount AMOUNT --period day|week|month [--timezone TZ] | --none';
      expectPositionals(rest, 1, usage);
      const budget = parseBudgetFlags(values, usage);
      await withStore(values.config, io, async (store) => {
        const account = await requireAccount(store, rest[0]);
        if (!(await store.setAccountBudget(account.id, budget))) throw new Error(`no account named "${account.name}"`);
        io.out(`account ${account.name}: budget ${formatBudget(budget)}${budget === null ? " (its role's default, if gateway.yaml sets one, applies)" : ''}`);
        await auditFromCli(store, io, accountBudgetChanged(account, budget));
      });
      return EXIT_OK;
    }
    case 'session-budget': {
      const usage = 'account session-budget NAME --amount AMOUNT | --none';
      expectPositionals(rest, 1, usage);
      const sessionBudget = parseSessionBudgetFlags(values, usage);
      await withStore(values.config, io, async (store) => {
        const account = await requireAccount(store, rest[0]);
        if (!(await store.setAccountSessionBudget(account.id, sessionBudget))) throw new Error(`no account named "${account.name}"`);
        io.out(`account ${account.name}: session budget ${formatSessionBudget(sessionBudget)}`);
        await auditFromCli(store, io, accountSessionBudgetChanged(account, sessionBudget));
      });
      return EXIT_OK;
    }
    case 'show':
      expectPositionals(rest, 1, 'account show NAME');
      await withBook(values.config, io, (store, book) => showAccountCommand(store, book, rest[0], io.out));
      return EXIT_OK;
    default:
      throw new UsageError('usage: tollgate account create|list|show|credit|budget|session-budget|disable|enable|password|reset-2fa|token …; run "tollgate help account"');
  }
}
