/**
 * The `tollgate` command line: a thin dispatcher. It parses arguments, opens what a command needs and
 * turns every failure into one line on stderr and an exit code (0 ok, 1 error, 2 usage error).
 * The commands themselves live in `cli/`, written against `Store` so tests need no process.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { BalanceBook } from './billing/book';
import { creditAccountCommand } from './cli/account-credit';
import { showAccountCommand } from './cli/account-show';
import { createAccountCommand } from './cli/accounts';
import { runConfigCheck } from './cli/config-check';
import { createKeyCommand, listKeysCommand, revokeKeyCommand, setKeyLimitsCommand } from './cli/keys';
import { verifyLedgerCommand } from './cli/ledger';
import { createRedemptionCodesCommand, listRedemptionCodesCommand } from './cli/redeem-codes';
import { DEFAULT_PID_FILE, reloadCommand } from './cli/reload';
import { ConfigError } from './config/config-error';
import { loadConfigFile } from './config/load';
import { configReference } from './config/reference';
import type { GatewayConfig } from './config/types';
import { openStore } from './store/open';
import type { Store } from './store/store';

/** Where the CLI reads its environment and writes its lines; tests pass their own. */
export interface CliIo {
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
}

const EXIT_OK = 0;
const EXIT_ERROR = 1;
const EXIT_USAGE = 2;

const HELP = `Usage: tollgate <command> [options]

Commands:
  serve [--config FILE] [--port N] [--pid-file F]
                                              run the gateway; SIGHUP makes it reload its config file
  reload [--pid-file F]                       check the running server's config file, then tell the
                                              server to reload it (SIGHUP); when the file is invalid,
                                              print every problem and signal nothing
  config check [FILE]                         check a gateway.yaml and print every problem
  config reference                            print every gateway.yaml field (Markdown table)
  account create NAME [--admin]               create an account (role user, or admin with --admin)
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
  ledger verify                               check every balance against the ledger; exits 1 on drift
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

/** A mistake in how the command was typed; exits 2. */
class UsageError extends Error {}

/** Runs node's parseArgs, turning its errors into a short UsageError. */
function parse<T>(run: () => T): T {
  try {
    return run();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // Node's unknown-option message goes on about `--`; its first sentence is the useful part.
    throw new UsageError(message.split('. To specify')[0]);
  }
}

/** Checks the number of positional arguments; `usage` goes into the message. */
function expectPositionals(positionals: string[], required: number, usage: string): void {
  if (positionals.length < required) throw new UsageError(`missing argument; usage: tollgate ${usage}`);
  if (positionals.length > required) {
    throw new UsageError(`unexpected argument "${positionals[required]}"; usage: tollgate ${usage}`);
  }
}

/** The config file a command uses: the flag, else $TOLLGATE_CONFIG, else ./gateway.yaml. */
function resolveConfigFile(flag: string | undefined, io: CliIo): string {
  const file = flag ?? (io.env.TOLLGATE_CONFIG || undefined) ?? 'gateway.yaml';
  return path.resolve(io.cwd, file);
}

/** Loads the config, opens and migrates its store, runs `work`, and always closes the store. */
async function withStore<T>(
  configFlag: string | undefined,
  io: CliIo,
  work: (store: Store, config: GatewayConfig) => Promise<T>,
): Promise<T> {
  const config = loadConfigFile(resolveConfigFile(configFlag, io), io.env);
  // The working directory, not the config's folder: see "Store:" in the help text.
  const store = openStore(config.store, io.cwd);
  try {
    await store.migrate();
    return await work(store, config);
  } finally {
    await store.close();
  }
}

/**
 * `withStore` plus the config's balance book, for commands that move or read live balances: with
 * Redis configured, a credit written only to the store would not reach the balance requests see.
 */
async function withBook<T>(configFlag: string | undefined, io: CliIo, work: (store: Store, book: BalanceBook) => Promise<T>): Promise<T> {
  return withStore(configFlag, io, async (store, config) => {
    // Loaded on demand so that commands without a book do not pull in the Redis client.
    const { openBook } = await import('./billing/open-book.js');
    const book = await openBook(config, store);
    try {
      return await work(store, book);
    } finally {
      await book.close();
    }
  });
}

/** Who a credit or code made here is recorded as: the operator's login when the shell says it. */
function cliActor(io: CliIo): string {
  return io.env.USER ? `cli:${io.env.USER}` : 'cli';
}

/** The pid file `serve` writes and `reload` reads: the flag, else $TOLLGATE_PID_FILE, else ./data/tollgate.pid. */
function resolvePidFile(flag: string | undefined, io: CliIo): string {
  return path.resolve(io.cwd, flag ?? (io.env.TOLLGATE_PID_FILE || undefined) ?? DEFAULT_PID_FILE);
}

/** Reads a port number from a flag or $PORT; undefined leaves the config's port. */
function parsePort(value: string | undefined, source: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const port = /^\d{1,5}$/.test(value) ? Number(value) : NaN;
  if (!(port <= 65535)) throw new UsageError(`${source} must be a port number (0-65535), got "${value}"`);
  return port;
}

async function serveCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(() =>
    parseArgs({
      args,
      allowPositionals: true,
      options: { config: { type: 'string' }, port: { type: 'string' }, 'pid-file': { type: 'string' } },
    }),
  );
  expectPositionals(positionals, 0, 'serve [--config FILE] [--port N] [--pid-file F]');
  const port = parsePort(values.port, '--port') ?? parsePort(io.env.PORT, 'PORT');
  // Loaded on demand so that key and account commands do not pull in the HTTP stack.
  const { serve } = await import('./main.js');
  await serve({ configFile: resolveConfigFile(values.config, io), port, pidFile: resolvePidFile(values['pid-file'], io) });
  return EXIT_OK;
}

function reloadServerCommand(args: string[], io: CliIo): number {
  const { values, positionals } = parse(() =>
    parseArgs({ args, allowPositionals: true, options: { 'pid-file': { type: 'string' } } }),
  );
  expectPositionals(positionals, 0, 'reload [--pid-file F]');
  const input = { pidFile: resolvePidFile(values['pid-file'], io), defaultConfigFile: resolveConfigFile(undefined, io), env: io.env };
  return reloadCommand(input, io.out, io.err);
}

async function configCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(() =>
    parseArgs({ args, allowPositionals: true, options: { config: { type: 'string' } } }),
  );
  if (positionals[0] === 'reference' && positionals.length === 1) {
    io.out(configReference());
    return EXIT_OK;
  }
  if (positionals[0] !== 'check') throw new UsageError('usage: tollgate config check [FILE] | tollgate config reference');
  if (positionals.length > 2) throw new UsageError(`unexpected argument "${positionals[2]}"; usage: tollgate config check [FILE]`);
  return runConfigCheck(resolveConfigFile(positionals[1] ?? values.config, io), io.out);
}

async function accountCommand(args: string[], io: CliIo): Promise<number> {
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

async function keyCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(() =>
    parseArgs({
      args,
      allowPositionals: true,
      options: {
        config: { type: 'string' },
        account: { type: 'string' },
        name: { type: 'string' },
        'spend-limit': { type: 'string' },
        models: { type: 'string' },
      },
    }),
  );
  const [action, ...rest] = positionals;
  switch (action) {
    case 'create': {
      const usage = 'key create --account NAME [--name LABEL] [--spend-limit AMOUNT] [--models a,b]';
      expectPositionals(rest, 0, usage);
      const account = values.account;
      if (account === undefined) throw new UsageError(`--account is required; usage: tollgate ${usage}`);
      const input = { account, name: values.name, spendLimit: values['spend-limit'], models: values.models };
      await withStore(values.config, io, (store) => createKeyCommand(store, input, io.out));
      return EXIT_OK;
    }
    case 'limits': {
      expectPositionals(rest, 1, 'key limits ID [--spend-limit AMOUNT|none] [--models LIST|all]');
      const input = { id: rest[0], spendLimit: values['spend-limit'], models: values.models };
      await withStore(values.config, io, (store) => setKeyLimitsCommand(store, input, io.out));
      return EXIT_OK;
    }
    case 'list':
      expectPositionals(rest, 0, 'key list [--account NAME]');
      await withStore(values.config, io, (store) => listKeysCommand(store, { account: values.account }, io.out));
      return EXIT_OK;
    case 'revoke':
      expectPositionals(rest, 1, 'key revoke ID');
      await withStore(values.config, io, (store) => revokeKeyCommand(store, rest[0], io.out));
      return EXIT_OK;
    default:
      throw new UsageError('usage: tollgate key create|list|limits|revoke …; run "tollgate help"');
  }
}

async function redeemCodesCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(() =>
    parseArgs({
      args,
      allowPositionals: true,
      options: {
        config: { type: 'string' },
        amount: { type: 'string' },
        count: { type: 'string' },
        'expires-days': { type: 'string' },
        limit: { type: 'string' },
      },
    }),
  );
  const [action, ...rest] = positionals;
  switch (action) {
    case 'create': {
      const usage = 'redeem-codes create --amount A --count N [--expires-days D]';
      expectPositionals(rest, 0, usage);
      const { amount, count } = values;
      if (amount === undefined || count === undefined) {
        throw new UsageError(`--amount and --count are required; usage: tollgate ${usage}`);
      }
      const input = { amount, count, expiresDays: values['expires-days'], actor: cliActor(io) };
      await withStore(values.config, io, (store) => createRedemptionCodesCommand(store, input, io.out));
      return EXIT_OK;
    }
    case 'list': {
      expectPositionals(rest, 0, 'redeem-codes list [--limit N]');
      const limit = values.limit === undefined ? undefined : Number(values.limit);
      if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 100_000)) {
        throw new UsageError(`--limit must be a whole number from 1 to 100000, got "${values.limit}"`);
      }
      await withStore(values.config, io, (store) => listRedemptionCodesCommand(store, io.out, new Date(), limit));
      return EXIT_OK;
    }
    default:
      throw new UsageError('usage: tollgate redeem-codes create|list …; run "tollgate help"');
  }
}

async function ledgerCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(() =>
    parseArgs({ args, allowPositionals: true, options: { config: { type: 'string' } } }),
  );
  if (positionals[0] !== 'verify') throw new UsageError('usage: tollgate ledger verify');
  expectPositionals(positionals.slice(1), 0, 'ledger verify');
  const { drifted } = await withStore(values.config, io, (store) => verifyLedgerCommand(store, io.out));
  return drifted === 0 ? EXIT_OK : EXIT_ERROR;
}

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
  });
}
