/**
 * `tollgate redemption-codes create|list` (also spelled `redeem-codes`): argument handling; the work is
 * in redeem-codes.ts. The console calls them redemption codes too.
 */
import { parseArgs } from 'node:util';
import { expectPositionals, parse, UsageError } from './args';
import type { CliIo } from './context';
import { cliActor, EXIT_OK, withStore } from './context';
import { createRedemptionCodesCommand, listRedemptionCodesCommand } from './redeem-codes';
import { formatUnits } from '../billing/money';
import { auditFromCli } from './audit';

export async function redeemCodesCommand(args: string[], io: CliIo): Promise<number> {
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
        json: { type: 'boolean' },
      },
    }),
  );
  const [action, ...rest] = positionals;
  switch (action) {
    case 'create': {
      const usage = 'redemption-codes create --amount A --count N [--expires-days D]';
      expectPositionals(rest, 0, usage);
      const { amount, count } = values;
      if (amount === undefined || count === undefined) {
        throw new UsageError(`--amount and --count are required; usage: tollgate ${usage}`);
      }
      const input = { amount, count, expiresDays: values['expires-days'], actor: cliActor(io) };
      await withStore(values.config, io, async (store) => {
        const { records } = await createRedemptionCodesCommand(store, input, io.out, new Date(), io.flushed);
        const first = records[0];
        const after = {
          count: records.length,
          amount: formatUnits(first.amount),
          expires_at: first.expiresAt?.toISOString() ?? null,
          first_id: first.id,
          last_id: records.at(-1)!.id,
        };
        await auditFromCli(store, io, { action: 'code.create', target: null, accountId: null, before: null, after });
      });
      return EXIT_OK;
    }
    case 'list': {
      expectPositionals(rest, 0, 'redemption-codes list [--limit N] [--json]');
      const limit = values.limit === undefined ? undefined : Number(values.limit);
      if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 100_000)) {
        throw new UsageError(`--limit must be a whole number from 1 to 100000, got "${values.limit}"`);
      }
      await withStore(values.config, io, (store) => listRedemptionCodesCommand(store, io.out, new Date(), limit, values.json === true));
      return EXIT_OK;
    }
    default:
      throw new UsageError('usage: tollgate redemption-codes create|list …; run "tollgate help redemption-codes"');
  }
}
