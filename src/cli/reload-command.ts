/** `tollgate reload`: reads the flags, then asks the running server to reload (`reloadCommand` in reload.ts). */
import { parseArgs } from 'node:util';
import { expectPositionals, parse } from './args';
import type { CliIo } from './context';
import { resolveConfigFile, resolvePidFile } from './context';
import { reloadCommand } from './reload';

export function reloadServerCommand(args: string[], io: CliIo): number {
  const { values, positionals } = parse(() =>
    parseArgs({ args, allowPositionals: true, options: { 'pid-file': { type: 'string' } } }),
  );
  expectPositionals(positionals, 0, 'reload [--pid-file F]');
  const input = { pidFile: resolvePidFile(values['pid-file'], io), defaultConfigFile: resolveConfigFile(undefined, io), env: io.env };
  return reloadCommand(input, io.out, io.err);
}
