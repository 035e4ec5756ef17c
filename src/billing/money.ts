/**
 * Money is an integer count of nano-units (10^-9 of one balance unit), held in a bigint: no floating
 * point anywhere in billing. Prices per million tokens are nano-units too, so a cost is an integer
 * product divided once, with one rounding per request.
 */

/** Nano-units per balance unit. */
export const NANO_PER_UNIT = 1_000_000_000n;
const DECIMALS = 9;

/**
 * Units written as a decimal (a YAML price, a CLI amount) in exact nano-units. Up to nine decimals are
 * representable; more is an error rather than a silent rounding of somebody's money.
 */
export function unitsToNano(value: number | string): bigint {
  const text = typeof value === 'number' ? numberText(value) : value.trim();
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (match === null) throw new RangeError(`"${value}" is not a decimal amount`);
  const [, sign, whole, fraction = ''] = match;
  if (fraction.replace(/0+$/, '').length > DECIMALS) {
    throw new RangeError(`"${value}" has more than ${DECIMALS} decimal places`);
  }
  const nano = BigInt(whole) * NANO_PER_UNIT + BigInt(fraction.padEnd(DECIMALS, '0').slice(0, DECIMALS));
  return sign === '-' ? -nano : nano;
}

/** A JS number's shortest decimal text, exponent notation expanded (1e-7 → "0.0000001"). */
function numberText(value: number): string {
  if (!Number.isFinite(value)) throw new RangeError(`${value} is not a finite amount`);
  const text = String(value);
  if (!/e/i.test(text)) return text;
  // toFixed keeps up to 20 decimals; trailing zeros are trimmed by the caller's check.
  return value.toFixed(20).replace(/\.?0+$/, '');
}

/** Nano-units as a decimal string of units, trailing zeros dropped ("12.5", "0.000000008", "3"). */
export function formatUnits(nano: bigint): string {
  const negative = nano < 0n;
  const magnitude = negative ? -nano : nano;
  const whole = magnitude / NANO_PER_UNIT;
  const fraction = (magnitude % NANO_PER_UNIT).toString().padStart(DECIMALS, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction === '' ? '' : `.${fraction}`}`;
}

/** `numerator / denominator` rounded half up, for non-negative integers. */
export function divideHalfUp(numerator: bigint, denominator: bigint): bigint {
  return (numerator * 2n + denominator) / (denominator * 2n);
}

/**
 * The operator's margin on a set of charges: what was charged less what it cost upstream, both over
 * the charges whose upstream cost is known only. A charge of unknown cost is left out of both sides
 * (counted apart), so an unknown cost never reads as pure profit. Negative when sold below cost.
 */
export function marginOf(costedCharged: bigint, upstreamCost: bigint): bigint {
  return costedCharged - upstreamCost;
}
