/**
 * One figure from the Top Up button to the ledger: an amount is an integer count of the currency's
 * minor unit (cents) from the console to Stripe, and the credit is that count times the configured
 * rate, in nano-units, computed with bigints. No float ever carries an amount.
 */
import { divideHalfUp, unitsToNano } from '../billing/money';

/** Currencies Stripe counts in whole units (no minor unit): 1000 JPY is sent as 1000. */
const ZERO_DECIMAL = new Set(['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf']);
/** Currencies with three decimals in Stripe's API. */
const THREE_DECIMAL = new Set(['bhd', 'jod', 'kwd', 'omr', 'tnd']);

/** Decimal places of the currency's minor unit as Stripe counts it. */
export function minorDigits(currency: string): number {
  if (ZERO_DECIMAL.has(currency)) return 0;
  return THREE_DECIMAL.has(currency) ? 3 : 2;
}

/** The nano-units credited for `minor` of `currency` at `unitsPerCurrencyUnit` balance units per currency unit. */
export function creditForMinor(minor: number, currency: string, unitsPerCurrencyUnit: number): bigint {
  const perUnit = unitsToNano(unitsPerCurrencyUnit);
  return divideHalfUp(BigInt(minor) * perUnit, 10n ** BigInt(minorDigits(currency)));
}

/** `minor` as the decimal the customer reads: 1050 → "10.50" (usd), 1000 → "1000" (jpy). */
export function formatMinor(minor: number, currency: string): string {
  const digits = minorDigits(currency);
  if (digits === 0) return String(minor);
  const text = String(minor).padStart(digits + 1, '0');
  return `${text.slice(0, -digits)}.${text.slice(-digits)}`;
}

/**
 * An amount the client sent as minor units: a safe non-negative integer, or as a decimal string of the
 * currency ("10.50") with at most the currency's decimals. Null when it is neither.
 */
export function parseMinor(value: unknown, currency: string): number | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value > 0 ? value : null;
  if (typeof value !== 'string') return null;
  const digits = minorDigits(currency);
  const match = /^(\d{1,9})(?:\.(\d+))?$/.exec(value.trim());
  if (match === null) return null;
  const [, whole, fraction = ''] = match;
  if (fraction.length > digits) return null;
  const minor = Number(whole) * 10 ** digits + Number(fraction.padEnd(digits, '0') || '0');
  return minor > 0 ? minor : null;
}
