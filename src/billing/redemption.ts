/**
 * Redemption codes: generated once, shown once, stored only as their SHA-256. Redeeming goes through
 * the store (which claims the code and records the credit in one transaction) and then the book, so
 * a balance kept outside the store sees the credit too.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { RedeemResult } from '../store/store';
import type { BalanceBook } from './book';

export const REDEMPTION_CODE_PREFIX = 'tg-';

/** RFC 4648 base32: no lookalike lower-case letters, and 5 bits per character means no modulo bias. */
const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
/** 24 characters × 5 bits = 120 random bits, exactly 15 random bytes. */
const CODE_RANDOM_CHARS = 24;
const CODE_RANDOM_BYTES = (CODE_RANDOM_CHARS * 5) / 8;

/** A new code: `tg-` and 24 base32 characters from the system's CSPRNG. */
export function generateRedemptionCode(): string {
  let bits = BigInt(`0x${randomBytes(CODE_RANDOM_BYTES).toString('hex')}`);
  let body = '';
  for (let i = 0; i < CODE_RANDOM_CHARS; i += 1) {
    body += BASE32[Number(bits & 31n)];
    bits >>= 5n;
  }
  return REDEMPTION_CODE_PREFIX + body;
}

/**
 * The SHA-256 the store keeps for a code. Surrounding whitespace (a pasted newline) is dropped; case
 * is kept, so a code matches only as it was printed.
 */
export function hashRedemptionCode(code: string): Buffer {
  return createHash('sha256').update(code.trim(), 'utf8').digest();
}

/**
 * Redeems `code` for an account: at most one caller ever gets `ok`, however many race, and the
 * credit reaches both the ledger and the live balance (the book sees to both).
 */
export function redeem(book: BalanceBook, code: string, accountId: string, actor: string | null): Promise<RedeemResult> {
  return book.redeem(hashRedemptionCode(code), accountId, actor);
}
