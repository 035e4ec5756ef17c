/** `--json` output of the listing commands: one JSON document, money as exact decimal strings. */
import { formatUnits } from '../billing/money';

/** Money is the only bigint in the records the CLI lists: shown in units, as the console's API does. */
function jsonValue(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? formatUnits(value) : value;
}

/** Prints `records` as indented JSON (Dates as ISO 8601). */
export function printJson(records: unknown, out: (line: string) => void): void {
  out(JSON.stringify(records, jsonValue, 2));
}
