/**
 * Charges the store refused (a value out of a column's range, a constraint it breaks): each is kept,
 * whole, in its own table with the store's error, so one bad record neither blocks the ledger writer
 * nor vanishes. An operator reads them (`tollgate ledger verify` counts them) and decides.
 */
import type { ChargeRecord } from './store';

/** The charge as JSON, amounts as strings (no bigint is lost); JSON escapes any control character. */
export function chargeJson(charge: ChargeRecord): string {
  return JSON.stringify(charge, (_key, value: unknown) => (typeof value === 'bigint' ? String(value) : value));
}

/** Text a store column accepts whatever the charge held: PostgreSQL refuses NUL, and ids stay short. */
export function columnText(text: string, maxLength = 200): string {
  return text.replaceAll('\u0000', '\uFFFD').slice(0, maxLength);
}

/** SQLite's primary result codes for a record it refuses: TOOBIG, CONSTRAINT, MISMATCH, RANGE. */
const SQLITE_REFUSALS: ReadonlySet<number> = new Set([18, 19, 20, 25]);

/**
 * Whether the store refused the records themselves (a value out of range, a broken constraint, a type
 * it cannot bind), as opposed to being unreachable or busy: only then does splitting the batch help.
 */
export function isRefusedRecord(error: unknown): boolean {
  if (error instanceof RangeError || error instanceof TypeError) return true;
  const { code, errcode } = (error ?? {}) as { code?: unknown; errcode?: unknown };
  // node:sqlite gives SQLite's extended result code as a number (its `code` is ERR_SQLITE_ERROR).
  if (typeof errcode === 'number') return SQLITE_REFUSALS.has(errcode & 0xff);
  if (typeof code !== 'string') return false;
  // PostgreSQL: class 22 data exception (numeric_value_out_of_range ...), class 23 integrity violation.
  if (/^2[23][0-9A-Z]{3}$/.test(code)) return true;
  // SQLite (better-sqlite3's SqliteError codes).
  return /^SQLITE_(CONSTRAINT|MISMATCH|TOOBIG|RANGE)/.test(code);
}
