/** `tollgate key create|list|limits|budget|session-budget|revoke`: argument handling; the work is in keys.ts. */
import { parseArgs } from 'node:util';
import { expectPositionals, parse, UsageError } from './args';
import type { CliIo } from './context';
import { EXIT_OK, withStore } from './context';
import { rateLimitFlags } from './key-limits';
import { createKeyCommand, listKeysCommand, revokeKeyCommand, setKeyLimitsCommand } from './keys';
import { keyCreated, keyLimitsChanged, keyRevoked } from '../audit/states';
import type { AccessStore, ApiKeyRecord } from '../store/access-store';
import { auditFromCli } from './audit';
import { formatBudget, formatSessionBudget, parseBudgetFlags, parseSessionBudgetFlags } from './budget';
import { changedOperatorLimits, operatorChange } from '../auth/key-limits';
import { requireKey } from './lookup';

/** The key as stored now; null when there is none (the command itself then says so). */
async function keyById(store: AccessStore, id: string): Promise<ApiKeyRecord | null> {
  return (await store.listKeys()).find((key) => key.id === id) ?? null;
}

export async function keyCommand(args: string[], io: CliIo): Promise<number> {
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
        rpm: { type: 'string' },
        tpm: { type: 'string' },
        concurrency: { type: 'string' },
        'allowed-networks': { type: 'string' },
        json: { type: 'boolean' },
        amount: { type: 'string' },
        period: { type: 'string' },
        timezone: { type: 'string' },
        none: { type: 'boolean' },
      },
    }),
  );
  const [action, ...rest] = positionals;
  switch (action) {
    case 'create': {
      const usage = 'key create --account NAME [--name LABEL] [--spend-limit AMOUNT] [--models a,b] [--rpm N] [--tpm N] [--concurrency N] [--allowed-networks CIDR,CIDR]';
      expectPositionals(rest, 0, usage);
      const account = values.account;
      if (account === undefined) throw new UsageError(`--account is required; usage: tollgate ${usage}`);
      const input = {
        account,
        name: values.name,
        spendLimit: values['spend-limit'],
        models: values.models,
        rateLimits: rateLimitFlags(values),
        allowedNetworks: values['allowed-networks'],
      };
      await withStore(values.config, io, async (store) => {
        const { record } = await createKeyCommand(store, input, io.out);
        await auditFromCli(store, io, keyCreated(record));
      });
      return EXIT_OK;
    }
    case 'limits': {
      expectPositionals(
        rest,
        1,
        'key limits ID [--spend-limit AMOUNT|none] [--models LIST|all] [--rpm N|none] [--tpm N|none] [--concurrency N|none] [--allowed-networks LIST|any]',
      );
      const input = {
        id: rest[0],
        spendLimit: values['spend-limit'],
        models: values.models,
        rateLimits: rateLimitFlags(values),
        allowedNetworks: values['allowed-networks'],
      };
      await withStore(values.config, io, async (store) => {
        const before = await keyById(store, input.id);
        const after = await setKeyLimitsCommand(store, input, io.out);
        if (before !== null) await auditFromCli(store, io, keyLimitsChanged(before, after));
      });
      return EXIT_OK;
    }
    case 'budget': {
      const usage = 'key budget ID --amount AMOUNT --period day|week|month [--timezone TZ] | --none';
      expectPositionals(rest, 1, usage);
      const budget = parseBudgetFlags(values, usage);
      await withStore(values.config, io, async (store) => {
        const before = await requireKey(store, rest[0]);
        // The operator's budget, kept apart like the other limits set from here: the owner can lower it only.
        if (!(await store.setKeyLimits(before.id, operatorChange(before, changedOperatorLimits(before.operatorLimits, { budget }))))) {
          throw new Error(`no key with id "${before.id}"`);
        }
        const after = await requireKey(store, before.id);
        io.out(`key ${before.id}: budget ${formatBudget(after.budget)}`);
        await auditFromCli(store, io, keyLimitsChanged(before, after));
      });
      return EXIT_OK;
    }
    case 'session-budget': {
      const usage = 'key session-budget ID --amount AMOUNT | --none';
      expectPositionals(rest, 1, usage);
      const sessionBudget = parseSessionBudgetFlags(values, usage);
      await withStore(values.config, io, async (store) => {
        const before = await requireKey(store, rest[0]);
        // The operator's, kept apart like the key's other limits set from here: the owner can lower it only.
        if (!(await store.setKeyLimits(before.id, operatorChange(before, changedOperatorLimits(before.operatorLimits, { sessionBudget }))))) {
          throw new Error(`no key with id "${before.id}"`);
        }
        const after = await requireKey(store, before.id);
        io.out(`key ${before.id}: session budget ${formatSessionBudget(after.sessionBudget)}`);
        await auditFromCli(store, io, keyLimitsChanged(before, after));
      });
      return EXIT_OK;
    }
    case 'list':
      expectPositionals(rest, 0, 'key list [--account NAME] [--json]');
      await withStore(values.config, io, (store) => listKeysCommand(store, { account: values.account }, io.out, new Date(), values.json === true));
      return EXIT_OK;
    case 'revoke':
      expectPositionals(rest, 1, 'key revoke ID');
      await withStore(values.config, io, async (store) => {
        const before = await keyById(store, rest[0]);
        await revokeKeyCommand(store, rest[0], io.out);
        const after = await keyById(store, rest[0]);
        if (before !== null) await auditFromCli(store, io, keyRevoked(before, after?.revokedAt ?? null));
      });
      return EXIT_OK;
    default:
      throw new UsageError('usage: tollgate key create|list|limits|budget|session-budget|revoke …; run "tollgate help key"');
  }
}
