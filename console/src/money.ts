// Money arrives as decimal strings ("12.5", "0.000042"). This module is the one place the console
// turns them into money on screen: in the gateway's currency, to the currency's minor digits, with
// the exact figure kept for the hover title; comparing and adding is done on the digits (and BigInt),
// never via floating point.

const DECIMAL = /^(-)?(\d+)(?:\.(\d+))?$/;

/** Decimal strings a person may type for an amount: "5", "0.25". */
export const AMOUNT_PATTERN = '\\d+(\\.\\d+)?';
/** What to show when an amount does not match AMOUNT_PATTERN (the browser's own text names no format). */
export const AMOUNT_PATTERN_MESSAGE = 'Enter an amount such as 5 or 2.50.';

interface ParsedDecimal {
  negative: boolean;
  whole: string;
  fraction: string;
}

function parse(value: string): ParsedDecimal | null {
  const match = DECIMAL.exec(value.trim());
  if (!match) return null;
  const whole = (match[2] ?? '0').replace(/^0+(?=\d)/, '');
  const fraction = (match[3] ?? '').replace(/0+$/, '');
  const isZero = /^0*$/.test(whole + fraction);
  return { negative: match[1] === '-' && !isZero, whole, fraction };
}

export function isDecimal(value: string): boolean {
  return parse(value) !== null;
}

/** True for "0", "0.00", "-0"; false for anything else, including non-decimals. */
export function isZero(value: string): boolean {
  const parsed = parse(value);
  return parsed !== null && /^0*$/.test(parsed.whole + parsed.fraction);
}

/**
 * The currency balances and prices are in (GET /api/meta: `plugins.billing.currency`, else
 * `payments.stripe.currency`, else usd). Set once at boot, before any page renders.
 */
let currencyCode = 'USD';
let rounded = currencyFormat('USD', false);
let exact = currencyFormat('USD', true);

function currencyFormat(code: string, allDigits: boolean): Intl.NumberFormat {
  // Nine fraction digits: a nano-unit, the finest amount the ledger keeps.
  return new Intl.NumberFormat(undefined, allDigits ? { style: 'currency', currency: code, maximumFractionDigits: 9 } : { style: 'currency', currency: code });
}

/** Sets the currency amounts are shown in; an unknown code leaves the previous one. */
export function setCurrency(code: string): void {
  const upper = code.toUpperCase();
  try {
    rounded = currencyFormat(upper, false);
    exact = currencyFormat(upper, true);
    currencyCode = upper;
  } catch {
    // Intl refused the code: amounts stay in the currency they were in.
  }
}

/** "USD": for labels such as "Amount (USD)". */
export function currency(): string {
  return currencyCode;
}

/**
 * Formats an exact decimal: Intl takes a decimal string as it is (no float on the way), and older
 * engines that turn it into a number first lose nothing at the few digits shown here.
 */
function formatDecimal(format: Intl.NumberFormat, value: string): string {
  return format.format(value as unknown as number);
}

/**
 * An amount as money: "12.5" → "$12.50", "22.685743" → "$22.69" (half away from zero, on the
 * digits), "0.000042" → "< $0.01" (never a misleading $0.00), "-3" → "-$3.00"; the currency's own
 * minor digits (none for JPY). The exact figure goes in the element's title (see ui.ts `money`), and
 * CSV and the API keep it. Anything that is not a decimal is shown unchanged rather than hidden.
 */
export function formatMoney(value: string | null | undefined): string {
  if (value === null || value === undefined) return '—';
  const parsed = parse(value);
  if (!parsed) return value;
  const digits = rounded.resolvedOptions().maximumFractionDigits ?? 2;
  const scaled = toScaled(value, digits + 1);
  const magnitude = ((scaled < 0n ? -scaled : scaled) + 5n) / 10n;
  if (magnitude === 0n && !isZero(value)) {
    const least = fromScaled(1n, digits);
    return parsed.negative ? `> ${formatDecimal(rounded, `-${least}`)}` : `< ${formatDecimal(rounded, least)}`;
  }
  return formatDecimal(rounded, fromScaled(parsed.negative ? -magnitude : magnitude, digits));
}

/** A price or an exact figure in full, as money: "0.075" → "$0.075", "3" → "$3.00". */
export function formatExactMoney(value: string | null | undefined): string {
  if (value === null || value === undefined) return '—';
  return isDecimal(value) ? formatDecimal(exact, value) : value;
}

/** A chart tick: `fractionDigits` decimals (at least the currency's), "$0.50", "$0.0005". */
export function formatTick(value: string, fractionDigits: number): string {
  const digits = Math.max(fractionDigits, rounded.resolvedOptions().minimumFractionDigits ?? 2);
  return new Intl.NumberFormat(undefined, { style: 'currency', currency: currencyCode, minimumFractionDigits: digits, maximumFractionDigits: digits }).format(value as unknown as number);
}

/** The value as an integer count of 10^-scale units (truncated), e.g. ("1.5", 2) → 150n. */
export function toScaled(value: string, scale: number): bigint {
  const parsed = parse(value);
  if (!parsed) return 0n;
  const digits = parsed.whole + parsed.fraction.padEnd(scale, '0').slice(0, scale);
  const magnitude = BigInt(digits);
  return parsed.negative ? -magnitude : magnitude;
}

/** The scale that represents every given value exactly. */
export function commonScale(values: readonly string[]): number {
  return values.reduce((scale, value) => Math.max(scale, parse(value)?.fraction.length ?? 0), 0);
}

/** The sum of decimal strings, as a decimal string. */
export function sumDecimals(values: readonly string[]): string {
  const scale = commonScale(values);
  const total = values.reduce((sum, value) => sum + toScaled(value, scale), 0n);
  return fromScaled(total, scale);
}

export function fromScaled(amount: bigint, scale: number): string {
  const negative = amount < 0n;
  const digits = (negative ? -amount : amount).toString().padStart(scale + 1, '0');
  const whole = digits.slice(0, digits.length - scale);
  const fraction = scale > 0 ? digits.slice(digits.length - scale).replace(/0+$/, '') : '';
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}
