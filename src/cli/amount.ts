/** Amounts of money typed on the command line: units as a decimal, turned into exact nano-units. */
import { unitsToNano } from '../billing/money';
import { UsageError } from './args';

/**
 * `text` (e.g. "12.5") in nano-units. Throws a one-line UsageError (exit 2) for anything that is not a positive
 * decimal with at most nine places: a typo must never move money.
 */
export function parsePositiveAmount(text: string, what: string): bigint {
  let nano: bigint;
  try {
    nano = unitsToNano(text);
  } catch {
    throw new UsageError(`invalid ${what} "${text}": use a decimal number of units with at most 9 decimal places`);
  }
  if (nano <= 0n) throw new UsageError(`invalid ${what} "${text}": must be more than 0`);
  return nano;
}
