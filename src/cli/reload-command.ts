/** `tollgate reload`: reads the flags, then asks the running server to reload (`reloadCommand` in reload.ts). */
import { parseArgs } from 'node:util';
import { expectPositionals, parse } from './args';
import type { CliIo } from './context';
import { namedPidFile, resolveConfigFile } from './context';
import { findPidFile, reloadCommand } from './reload';
import { parsePort } from './serve-command';

export function reloadServerCommand(args: string[], io: CliIo): number {
  const { values, positionals } = parse(() =>
    parseArgs({ args, allowPositionals: true, options: { 'pid-file': { type: 'string' }, port: { type: 'string' }, config: { type: 'string' } } }),
  );
  expectPositionals(positionals, 0, 'reload [--port N] [--pid-file F] [--config FILE]');
  // The instance to reload: a named pid file, else the one for --port (or $PORT), else the only one.
  const port = parsePort(values.port, '--port') ?? parsePort(io.env.PORT, 'PORT');
  const pidFile = namedPidFile(values['pid-file'], io) ?? findPidFile(io.cwd, port);
  const input = { pidFile, defaultConfigFile: resolveConfigFile(values.config, io), env: io.env };
  return reloadCommand(input, io.out, io.err);
}
