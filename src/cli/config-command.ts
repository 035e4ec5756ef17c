/** `tollgate config check|reference`: argument handling for the config commands. */
import { parseArgs } from 'node:util';
import { configReference } from '../config/reference';
import { parse, UsageError } from './args';
import { runConfigCheck } from './config-check';
import type { CliIo } from './context';
import { EXIT_OK, resolveConfigFile } from './context';

export async function configCommand(args: string[], io: CliIo): Promise<number> {
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
