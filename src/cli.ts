/**
 * The `tollgate` command line: a thin dispatcher. It picks the command group, shows the help text and
 * turns every failure into one line on stderr and an exit code (0 ok, 1 error, 2 usage error).
 * Each group's argument handling is in `cli/<group>-command.ts`; the commands themselves live in
 * `cli/`, written against `Store` so tests need no process.
 */
import { accountCommand } from './cli/account-command';
import { UsageError } from './cli/args';
import { configCommand } from './cli/config-command';
import type { CliIo } from './cli/context';
import { EXIT_ERROR, EXIT_OK, EXIT_USAGE } from './cli/context';
import { keyCommand } from './cli/key-command';
import { ledgerCommand } from './cli/ledger-command';
import { redeemCodesCommand } from './cli/redeem-codes-command';
import { reloadServerCommand } from './cli/reload-command';
import { serveCommand } from './cli/serve-command';
import { ConfigError } from './config/config-error';

export type { CliIo } from './cli/context';

const HELP = `Usage: tollgate <command> [options]

Commands:
  serve [--config FILE] [--port N] [--pid-file F]
                                              run the gateway; SIGHUP makes it reload its config file
  reload [--pid-file F]                       check the running server's config file, then tell the
                                              server to reload it (SIGHUP); when the file is invalid,
                                              print every problem and signal nothing
  config check [FILE]                         check a gateway.yaml and print every problem
  config reference                            print every gateway.yaml field (Markdown table)
  account create NAME [--admin] [--email ADDRESS] [--password-stdin]
                                              create an account (role user, or admin with --admin) and
                                              print its console password (generated, shown once),
                                              or take the password from standard input
  account password NAME [--password-stdin]    set a new console password (generated unless given)
  account token NAME [--name LABEL]           print a management token (tgm_…) for scripts calling /api
  account credit NAME AMOUNT --note TEXT      add AMOUNT units to the account (up to 9 decimals);
                                              prints the new balance
  account show NAME                           the account, its balance, keys, last 10 requests
                                              and last 5 credits
  key create --account NAME [--name LABEL] [--spend-limit AMOUNT] [--models a,b]
                                              create an API key; the key is the LAST line printed
                                              and is shown only this once
  key list [--account NAME]                   list keys (prefix…last4 only, never the full key)
  key limits ID [--spend-limit AMOUNT|none] [--models LIST|all]
                                              change what a key may spend and which models it may use
  key revoke ID                               revoke a key; a running server refuses it at once
  redeem-codes create --amount A --count N [--expires-days D]
                                              make N codes worth A units each; the codes are the
                                              LAST N lines printed and are shown only this once
  redeem-codes list [--limit N]               list codes (amount, expiry, who redeemed; never the code)
  ledger verify                               check every balance (stored and live) against the ledger; exits 1 on drift
  ledger heal                                 rebuild drifting live balances (Redis) from the ledger
  help                                        show this text

The account, key, redeem-codes and ledger commands also take --config FILE.
Credits and codes record who made them as cli:$USER (or cli when $USER is unset).

Config file: --config FILE (or FILE for config check), else $TOLLGATE_CONFIG, else ./gateway.yaml.
Port: --port N, else $PORT, else server.port from the config file.
Pid file: --pid-file F, else $TOLLGATE_PID_FILE, else ./data/tollgate.pid (in the working directory).
Reload: models, providers, prices, plugin settings and server limits apply to new requests; requests
  already running finish on the old config. server.host, server.port, store.* and redis.* need a
  restart (the running values stay). \`reload\` checks the file with this shell's environment.
Store: store.url in the config file. A relative sqlite:<path> resolves against the WORKING
  DIRECTORY, not the config file's folder: run account and key commands from the directory the
  server runs in (the repository root for \`npm start\`), so both use the same database file.

Exit codes: 0 success, 1 error, 2 usage error.`;

async function dispatch(argv: string[], io: CliIo): Promise<number> {
  const [command, ...args] = argv;
  if (command === undefined) throw new UsageError('missing command; run "tollgate help"');
  if (command === 'help' || argv.includes('--help') || argv.includes('-h')) {
    io.out(HELP);
    return EXIT_OK;
  }
  switch (command) {
    case 'serve':
      return serveCommand(args, io);
    case 'config':
      return configCommand(args, io);
    case 'reload':
      return reloadServerCommand(args, io);
    case 'account':
      return accountCommand(args, io);
    case 'key':
      return keyCommand(args, io);
    case 'redeem-codes':
      return redeemCodesCommand(args, io);
    case 'ledger':
      return ledgerCommand(args, io);
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

/** The `tollgate` entry point (bin/tollgate.js): runs `argv` against the real process. */
export async function main(argv: string[]): Promise<void> {
  process.exitCode = await runCli(argv, {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    env: process.env,
    cwd: process.cwd(),
    readStdin: async () => {
      let text = '';
      for await (const chunk of process.stdin) text += String(chunk);
      return text;
    },
  });
}
