/** `tollgate serve`: reads the flags and environment, then starts the gateway (`serve` in main.ts). */
import { parseArgs } from 'node:util';
import { expectPositionals, parse, UsageError } from './args';
import type { CliIo } from './context';
import { EXIT_OK, namedPidFile, resolveConfigFile } from './context';

/** Reads a port number from a flag or $PORT; undefined leaves the config's port. */
export function parsePort(value: string | undefined, source: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const port = /^\d{1,5}$/.test(value) ? Number(value) : NaN;
  if (!(port <= 65535)) throw new UsageError(`${source} must be a port number (0-65535), got "${value}"`);
  return port;
}

export async function serveCommand(args: string[], io: CliIo): Promise<number> {
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
  const { serve } = await import('../main.js');
  await serve({ configFile: resolveConfigFile(values.config, io), port, pidFile: namedPidFile(values['pid-file'], io), cwd: io.cwd });
  return EXIT_OK;
}
