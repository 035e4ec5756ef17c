// The money simulator (test/sim): `npm run sim -- --seeds N [--store local|sqlite|pg|redis] [--ops M]
// [--first S] [--seed S] [--check RULE…] [--strict] [--clock MS] [--bail]`. Prints each store's figures and the seed, the
// replay command and the last operations of every failure; exits 1 when any seed failed.
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';

const require = createRequire(import.meta.url);
const { runStore, report } = require('../dist/test/sim/run.js');
const { STORES } = require('../dist/test/sim/books.js');

const { values } = parseArgs({
  options: {
    seeds: { type: 'string', default: '100' },
    first: { type: 'string', default: '1' },
    seed: { type: 'string' },
    ops: { type: 'string', default: '500' },
    store: { type: 'string', multiple: true },
    strict: { type: 'boolean', default: false },
    check: { type: 'string', multiple: true },
    clock: { type: 'string' },
    bail: { type: 'boolean', default: false },
  },
});

const stores = values.store ?? STORES;
for (const store of stores) {
  if (!STORES.includes(store)) {
    console.error(`unknown store "${store}": one of ${STORES.join(', ')}`);
    process.exit(2);
  }
}
const check = values.strict ? true : (values.check ?? []);
const first = Number(values.first);
const seeds = values.seed !== undefined ? [Number(values.seed)] : Array.from({ length: Number(values.seeds) }, (_, index) => first + index);
let failed = false;
for (const store of stores) {
  const run = await runStore({ store, seeds, ops: Number(values.ops), check, bail: values.bail, ...(values.clock !== undefined && { clock: Number(values.clock) }) });
  for (const line of report(run, check)) console.log(line);
  if (run.failures.length > 0) failed = true;
}
const { stopTokenizer } = require('../dist/src/billing/tokenizer.js');
await stopTokenizer();
process.exit(failed ? 1 : 0);
