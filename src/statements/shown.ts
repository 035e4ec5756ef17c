/**
 * Amounts as a statement shows them to people: the currency's code and two decimals, rounded half
 * away from zero. The exact figure stays in the JSON and the CSV beside it.
 */
import { unitsToNano } from '../billing/money';

const NANO_PER_CENT = 10_000_000n;

/** `1,234.57 USD` from exact units (`"1234.567"`). */
export function shownAmount(units: string, currency: string): string {
  const nano = unitsToNano(units);
  const negative = nano < 0n;
  const magnitude = negative ? -nano : nano;
  const cents = (magnitude + NANO_PER_CENT / 2n) / NANO_PER_CENT;
  const whole = (cents / 100n).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const text = `${whole}.${(cents % 100n).toString().padStart(2, '0')}`;
  return `${negative && cents > 0n ? '-' : ''}${text} ${currency}`;
}
