/**
 * The `tollgate` command line: a thin dispatcher. It picks the command group, shows the help text (all
 * of it, or one group's: `tollgate help key`) and turns every failure into one line on stderr and an
 * exit code (0 ok, 1 error, 2 usage error). A reader that closes the pipe early (`| head`) ends the
 * command quietly with 0.
 * Each group's argument handling is in `cli/<group>-command.ts`; the commands themselves live in
 * `cli/`, written against `Store` so tests need no process.
 */
import { accountCommand } from './cli/account-command';
import { auditCommand } from './cli/audit-command';
import { UsageError } from './cli/args';
import { configCommand } from './cli/config-command';
import type { CliIo } from './cli/context';
import { EXIT_ERROR, EXIT_OK, EXIT_USAGE } from './cli/context';
import { keyCommand } from './cli/key-command';
import { ledgerCommand } from './cli/ledger-command';
import { orgCommand } from './cli/org-command';
import { statementsCommand } from './cli/statements-command';
import { modelsCommand } from './cli/models-command';
import { paymentsCommand } from './cli/payments-command';
import { redeemCodesCommand } from './cli/redeem-codes-command';
import { reloadServerCommand } from './cli/reload-command';
import { serveCommand } from './cli/serve-command';
import { ConfigError } from './config/config-error';
import { PACKAGE_VERSION } from './paths';

export type { CliIo } from './cli/context';

const HELP = `Usage: tollgate <command> [options]

Commands:
  serve [--config FILE] [--port N] [--pid-file F]
                                              run the gateway; SIGHUP makes it reload its config file
  reload [--config FILE] [--port N] [--pid-file F]
                                              check the running server's config file, then tell the
                                              server to reload it (SIGHUP); when the file is invalid,
                                              print every problem and signal nothing
  config check [FILE]                         check a gateway.yaml and print every problem
  config reference                            print every gateway.yaml field (Markdown table)
  models search TEXT                          the model catalog's models whose id or name contains
                                              TEXT: provider, limits, list price and its date
  models add PROVIDER MODEL [--as ID] [--markup M | --price-from-catalog]
             [--context-window N] [--max-output-tokens N]
                                              add the catalog model MODEL, served by the config's
                                              provider PROVIDER, to the config file: family, route,
                                              limits and a price of M x the list price (or the list
                                              price), its source and date as comments; the rest of
                                              the file is left as it was
  models check                                configured limits and prices that differ from the
                                              catalog's, with the catalog's date
  account create NAME [--admin] [--email ADDRESS] [--password-stdin]
                                              create an account (role user, or admin with --admin) and
                                              print its console password (generated, shown once),
                                              or take the password from standard input
  account list [--json]                       every account: role, status, balance, held
  account show NAME                           the account, its balance, keys, last 10 requests
                                              and last 5 credits
  account credit NAME AMOUNT --note TEXT      add AMOUNT units to the account (up to 9 decimals);
                                              prints the new balance
  account budget NAME --amount A --period day|week|month [--timezone TZ] | --none
                                              most the account may spend per day, week (from Monday)
                                              or month of local time in TZ (default UTC); --none
                                              removes it (its role's default in gateway.yaml applies)
  account session-budget NAME --amount A | --none
                                              most one agent session of the account may spend,
                                              through any of its keys; --none removes it
  account disable NAME                        refuse the account's keys and end its console sessions
                                              and management tokens (enabling restores none of them)
  account enable NAME                         let a disabled account in again
  account password NAME [--password-stdin]    set a new console password (generated unless given);
                                              ends every console session and management token
  account reset-2fa NAME                      remove the account's two-factor sign-in (a lost phone)
                                              and end its sessions and tokens
  account token NAME [--name LABEL] [--days N]
                                              print a management token (tgm_…) for scripts calling
                                              /api; it expires after N days (default 90)
  key create --account NAME [--name LABEL] [--spend-limit AMOUNT] [--models a,b]
             [--rpm N] [--tpm N] [--concurrency N] [--allowed-networks CIDR,CIDR]
                                              create an API key; the key is the LAST line printed
                                              and is shown only this once. The limits are the
                                              operator's: the owner can tighten, never loosen them
  key list [--account NAME] [--json]          list keys (prefix…last4 only, never the full key)
  key limits ID [--spend-limit AMOUNT|none] [--models LIST|all] [--rpm N|none] [--tpm N|none]
                [--concurrency N|none] [--allowed-networks CIDR,CIDR|any]
                                              change the operator's limits on a key: what it may
                                              spend, which models, how fast, from which networks
                                              (the owner's own tighter limits still apply)
  key budget ID --amount A --period day|week|month [--timezone TZ] | --none
                                              most the key may spend per period, on top of its
                                              account's; --none removes it
  key session-budget ID --amount A | --none   most one agent session may spend through the key
                                              (the operator's: the owner can lower it only)
  key revoke ID                               revoke a key; a running server refuses it at once
  org create NAME --owner ACCOUNT             make an organisation: an account nobody signs in to,
                                              spent by its members; ACCOUNT is its first owner
  org list [--json]                           list organisations
  org members ORG [--json]                    list an organisation's members and their roles
  org invite ORG NAME_OR_EMAIL [--role ROLE] [--days N]
                                              invite a person (role owner|admin|billing|member,
                                              default member; open 7 days); the link is the LAST
                                              line printed, shown only this once
  org role ORG ACCOUNT ROLE                   change a member's role (an owner always stays)
  org remove ORG ACCOUNT                      remove a member; their keys in it stop at once
  redemption-codes create --amount A --count N [--expires-days D]
                                              make N codes worth A units each; the codes are the
                                              LAST N lines printed, shown only this once, and stored
                                              only after they were written out
  redemption-codes list [--limit N] [--json]  list codes (amount, expiry, who redeemed; never the code)
  ledger verify                               check every balance (stored and live) against the ledger; exits 1 on drift
  ledger heal                                 rebuild drifting live balances (Redis) from the ledger
  statements issue --month YYYY-MM            issue every account's statement of a closed month (UTC),
                                              and any earlier month an account lacks; issued ones
                                              are printed unchanged
  statements list --account NAME [--json]     one account's statements, issuing closed months not
                                              issued yet
  payments reconcile                          look every pending card payment up in Stripe and credit
                                              what Stripe says was paid (once); exits 1 when Stripe
                                              could not be asked about some of them
  audit list [--actor A] [--target ID] [--action ACTION] [--since DAY] [--until DAY] [--limit N] [--csv]
                                              the audit log, newest first: who changed which account,
                                              balance, key, token or code, and every config reload
  help [COMMAND]                              show this text, or one command's part of it
  --version                                   print Tollgate's version

\`redeem-codes\` is another name for \`redemption-codes\` (the console's Admin → Codes page).
The models add and check, account, key, org, redemption-codes, ledger, statements, payments and audit
commands also take --config FILE.
Credits, codes and audit entries record who made them as cli:$USER (or cli when $USER is unset).
--json prints the listing as one JSON document; money is a decimal string of units.

Config file: --config FILE (or FILE for config check), else $TOLLGATE_CONFIG, else ./gateway.yaml.
Port: --port N, else $PORT, else server.port from the config file.
Pid file: --pid-file F, else $TOLLGATE_PID_FILE, else ./data/tollgate-<port>.pid (in the working
  directory), one per instance; \`reload\` finds the one for --port (or the config's port), or the
  only one there is.
Reload: models, providers, prices, plugin settings and server limits apply to new requests; requests
  already running finish on the old config. server.host, server.port, store.* and redis.* need a
  restart (the running values stay). \`reload\` checks the file with this shell's environment.
Store: store.url in the config file. A relative sqlite:<path> resolves against the WORKING
  DIRECTORY, not the config file's folder: run account and key commands from the directory the
  server runs in (the repository root for \`npm start\`), so both use the same database file.

Exit codes:
  0  success (also when the reader of the output closed the pipe early)
  1  error: something named does not exist, the config file is invalid, the store failed,
     \`ledger verify\` found drift, \`reload\` found no server
  2  usage error: an unknown command or flag, a missing or extra argument, a bad amount or number`;

const COMMANDS = ['serve', 'reload', 'config', 'models', 'account', 'key', 'org', 'redemption-codes', 'redeem-codes', 'ledger', 'statements', 'help'];

/** The help text's entries for one command (its lines under "Commands:"), or the whole text. */
export function helpText(command?: string): string {
  if (command === undefined) return HELP;
  const wanted = command === 'redeem-codes' ? 'redemption-codes' : command;
  if (!COMMANDS.includes(command)) throw new UsageError(`unknown command "${command}"; run "tollgate help"`);
  const lines = HELP.split('\n');
  const entries: string[] = [];
  let inEntry = false;
  for (const line of lines.slice(lines.indexOf('Commands:') + 1)) {
    if (line === '') break;
    // An entry starts at two spaces of indent; its continuation lines are indented further.
    if (/^ {2}\S/.test(line)) inEntry = line.slice(2).split(' ')[0] === wanted;
    if (inEntry) entries.push(line);
  }
  return [`Usage: tollgate ${wanted} …`, '', ...entries, '', 'Run "tollgate help" for config files, pid files and exit codes.'].join('\n');
}

async function dispatch(argv: string[], io: CliIo): Promise<number> {
  const [command, ...args] = argv;
  if (command === undefined) throw new UsageError('missing command; run "tollgate help"');
  if (command === '--version' || command === '-v' || command === 'version') {
    io.out(PACKAGE_VERSION);
    return EXIT_OK;
  }
  if (command === 'help' || command === '--help' || command === '-h') {
    if (args.length > 1) throw new UsageError('usage: tollgate help [COMMAND]');
    io.out(helpText(args[0]));
    return EXIT_OK;
  }
  if (argv.includes('--help') || argv.includes('-h')) {
    io.out(helpText(command));
    return EXIT_OK;
  }
  switch (command) {
    case 'serve':
      return serveCommand(args, io);
    case 'config':
      return configCommand(args, io);
    case 'reload':
      return reloadServerCommand(args, io);
    case 'models':
      return modelsCommand(args, io);
    case 'account':
      return accountCommand(args, io);
    case 'key':
      return keyCommand(args, io);
    case 'redemption-codes':
    case 'redeem-codes':
      return redeemCodesCommand(args, io);
    case 'ledger':
      return ledgerCommand(args, io);
    case 'org':
      return orgCommand(args, io);
    case 'statements':
      return statementsCommand(args, io);
    case 'audit':
      return auditCommand(args, io);
    case 'payments':
      return paymentsCommand(args, io);
    default:
      throw new UsageError(`unknown command "${command}"; run "tollgate help"`);
  }
}

/** Prints `error` the CLI way and returns the exit code: one line, never a stack trace. */
function reportError(error: unknown, io: CliIo): number {
  if (error instanceof UsageError) {
    io.err(`tollgate: ${error.message}`);
    return EXIT_USAGE;
  }
  if (error instanceof ConfigError) {
    // Already `file:line:col path: problem` lines, one per problem.
    for (const line of error.message.split('\n')) if (line !== '') io.err(line);
    return EXIT_ERROR;
  }
  const message = error instanceof Error ? error.message : String(error);
  io.err(`tollgate: ${message.split('\n')[0]}`);
  return EXIT_ERROR;
}

/** Runs one command line and returns its exit code; never throws. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  try {
    return await dispatch(argv, io);
  } catch (error) {
    return reportError(error, io);
  }
}

/**
 * A reader that stopped reading (`tollgate key list | head -1`) is not an error: end quietly, with 0.
 * Anything else that breaks standard output is reported like any failure.
 */
function endOnClosedPipe(error: NodeJS.ErrnoException): void {
  if (error.code === 'EPIPE') process.exit(EXIT_OK);
  process.stderr.write(`tollgate: cannot write the output (${error.message})\n`);
  process.exit(EXIT_ERROR);
}

/** Settles once everything written to standard output so far has left the process. */
function stdoutFlushed(): Promise<void> {
  return new Promise((resolve) => process.stdout.write('', () => resolve()));
}

/** The `tollgate` entry point (bin/tollgate.js): runs `argv` against the real process. */
export async function main(argv: string[]): Promise<void> {
  process.stdout.on('error', endOnClosedPipe);
  process.exitCode = await runCli(argv, {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    flushed: stdoutFlushed,
    env: process.env,
    cwd: process.cwd(),
    readStdin: async () => {
      let text = '';
      for await (const chunk of process.stdin) text += String(chunk);
      return text;
    },
  });
}
