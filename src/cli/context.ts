/**
 * What a `tollgate` command runs against: the process's streams, environment and working directory
 * (`CliIo`), the exit codes, and the files, store and balance book a command opens from them.
 */
import path from 'node:path';
import type { BalanceBook } from '../billing/book';
import { loadConfigFile } from '../config/load';
import type { GatewayConfig } from '../config/types';
import { openStore } from '../store/open';
import type { Store } from '../store/store';

/** Where the CLI reads its environment and writes its lines; tests pass their own. */
export interface CliIo {
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  /** All of standard input (`--password-stdin`); absent when there is none to read. */
  readonly readStdin?: () => Promise<string>;
  /** Settles once every line given to `out` so far has been written (one-time secrets wait for it). */
  readonly flushed?: () => Promise<void>;
}

export const EXIT_OK = 0;
export const EXIT_ERROR = 1;
export const EXIT_USAGE = 2;

/** The config file a command uses: the flag, else $TOLLGATE_CONFIG, else ./gateway.yaml. */
export function resolveConfigFile(flag: string | undefined, io: CliIo): string {
  const file = flag ?? (io.env.TOLLGATE_CONFIG || undefined) ?? 'gateway.yaml';
  return path.resolve(io.cwd, file);
}

/**
 * The pid file named by the flag, else by $TOLLGATE_PID_FILE; undefined means one per instance,
 * ./data/tollgate-<port>.pid (see `pidFileFor` in reload.ts).
 */
export function namedPidFile(flag: string | undefined, io: CliIo): string | undefined {
  const named = flag ?? (io.env.TOLLGATE_PID_FILE || undefined);
  return named === undefined ? undefined : path.resolve(io.cwd, named);
}

/** Loads the config, opens and migrates its store, runs `work`, and always closes the store. */
export async function withStore<T>(
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
export async function withBook<T>(
  configFlag: string | undefined,
  io: CliIo,
  work: (store: Store, book: BalanceBook, config: GatewayConfig) => Promise<T>,
): Promise<T> {
  return withStore(configFlag, io, async (store, config) => {
    // Loaded on demand so that commands without a book do not pull in the Redis client.
    const { openBook } = await import('../billing/open-book.js');
    const book = await openBook(config, store);
    try {
      return await work(store, book, config);
    } finally {
      await book.close();
    }
  });
}

/** Who a credit or code made here is recorded as: the operator's login when the shell says it. */
export function cliActor(io: CliIo): string {
  return io.env.USER ? `cli:${io.env.USER}` : 'cli';
}
