// Money arrives as decimal strings ("12.5", "0.000042"). Formatting and comparing
// them is done on the digits (and BigInt), never via floating point, so a balance
// is shown exactly as the server keeps it.

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
 * "12.5" → "12.50"; "0.000042" → "0.000042"; "5.000" → "5.00"; "-3" → "−3.00".
 * Keeps every significant fraction digit and at least `minFractionDigits`. No digit
 * grouping: the digits stay exactly the server's, so they can be copied and compared.
 * Anything that is not a decimal is shown unchanged rather than hidden.
 */
export function formatMoney(value: string | null | undefined, minFractionDigits = 2): string {
  if (value === null || value === undefined) return '—';
  const parsed = parse(value);
  if (!parsed) return value;
  const fraction = parsed.fraction.padEnd(minFractionDigits, '0');
  return `${parsed.negative ? '−' : ''}${parsed.whole}${fraction ? `.${fraction}` : ''}`;
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
