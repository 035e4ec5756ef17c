/** `tollgate models search|add|check`: argument handling for the model catalog commands. */
import { parseArgs } from 'node:util';
import { loadConfigFile } from '../config/load';
import { expectPositionals, parse, UsageError } from './args';
import type { CliIo } from './context';
import { resolveConfigFile } from './context';
import { runModelsAdd } from './models-add';
import { runModelsCheck } from './models-check';
import { runModelsSearch } from './models-search';

const USAGE = 'usage: tollgate models search TEXT | models add PROVIDER MODEL [--as ID] [--markup M | --price-from-catalog] [--config FILE] | models check [--config FILE]';

function positiveInteger(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9]\d*$/.test(value)) throw new UsageError(`${flag} takes a whole number above 0, not "${value}"`);
  return Number(value);
}

export async function modelsCommand(args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'search') {
    const { positionals } = parse(() => parseArgs({ args: rest, allowPositionals: true, options: {} }));
    expectPositionals(positionals, 1, 'models search TEXT');
    return runModelsSearch(positionals[0], io.out);
  }
  if (sub === 'add') {
    const { values, positionals } = parse(() =>
      parseArgs({
        args: rest,
        allowPositionals: true,
        options: {
          as: { type: 'string' },
          markup: { type: 'string' },
          'price-from-catalog': { type: 'boolean' },
          'context-window': { type: 'string' },
          'max-output-tokens': { type: 'string' },
          config: { type: 'string' },
        },
      }),
    );
    expectPositionals(positionals, 2, 'models add PROVIDER MODEL [--as ID] [--markup M | --price-from-catalog]');
    if ((values.markup === undefined) === (values['price-from-catalog'] !== true)) {
      throw new UsageError('models add sells at --markup M (times the catalog list price) or --price-from-catalog (at it): give one');
    }
    return runModelsAdd(
      {
        file: resolveConfigFile(values.config, io),
        provider: positionals[0],
        model: positionals[1],
        as: values.as,
        markup: values.markup,
        contextWindow: positiveInteger(values['context-window'], '--context-window'),
        maxOutputTokens: positiveInteger(values['max-output-tokens'], '--max-output-tokens'),
        env: io.env,
      },
      io.out,
    );
  }
  if (sub === 'check') {
    const { values, positionals } = parse(() => parseArgs({ args: rest, allowPositionals: true, options: { config: { type: 'string' } } }));
    expectPositionals(positionals, 0, 'models check [--config FILE]');
    return runModelsCheck(loadConfigFile(resolveConfigFile(values.config, io), io.env), io.out);
  }
  throw new UsageError(USAGE);
}
