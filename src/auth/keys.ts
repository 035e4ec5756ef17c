/**
 * API keys: how they are made, hashed, recognised and compared. The plaintext key exists only in the
 * response that creates it; the store keeps the hash plus a display prefix and the last four characters.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Every Tollgate key starts with this, like the vendors' keys, so SDKs and secret scanners recognise it. */
const API_KEY_PREFIX = 'sk-';

/** Random characters after the prefix: 48 × log2(62) ≈ 285 bits of entropy. */
const API_KEY_RANDOM_CHARS = 48;

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * The largest multiple of 62 that fits in a byte. Bytes at or above it are thrown away, so that
 * `byte % 62` picks every character with the same probability (no modulo bias).
 */
const UNBIASED_BYTE_LIMIT = 256 - (256 % BASE62.length);

/** How many characters of the key are safe to show: `sk-` and four more. */
const DISPLAY_PREFIX_CHARS = API_KEY_PREFIX.length + 4;

/**
 * What a presented key may look like: generous enough for keys issued by other formats later, bounded
 * so that a megabyte-long header is rejected before it is hashed.
 */
const PRESENTED_KEY_MIN_BODY = 32;
const PRESENTED_KEY_MAX_TOTAL = 200;
const PRESENTED_KEY_PATTERN = /^sk-[A-Za-z0-9_-]+$/;

/** A freshly generated key: the plaintext (show once), its hash (store) and the safe display parts. */
export interface GeneratedApiKey {
  readonly key: string;
  readonly hash: Buffer;
  readonly prefix: string;
  readonly last4: string;
}

/** Returns `count` base62 characters drawn uniformly from crypto.randomBytes by rejection sampling. */
function randomBase62(count: number): string {
  let result = '';
  while (result.length < count) {
    // ~3% of bytes are rejected, so asking for a quarter more than needed almost always suffices.
    for (const byte of randomBytes(Math.ceil((count - result.length) * 1.25) + 4)) {
      if (byte >= UNBIASED_BYTE_LIMIT) continue;
      result += BASE62[byte % BASE62.length];
      if (result.length === count) break;
    }
  }
  return result;
}

/** Generates a new API key (`sk-` + 48 base62 characters) with its hash and display parts. */
export function generateApiKey(): GeneratedApiKey {
  const key = API_KEY_PREFIX + randomBase62(API_KEY_RANDOM_CHARS);
  return {
    key,
    hash: hashApiKey(key),
    prefix: key.slice(0, DISPLAY_PREFIX_CHARS),
    last4: key.slice(-4),
  };
}

/**
 * Hashes a key for storage and lookup: SHA-256 of its UTF-8 bytes, 32 bytes.
 *
 * A fast hash is the right tool here. Slow hashes (bcrypt, scrypt, argon2) exist to make guessing
 * low-entropy passwords expensive; a key with 285 random bits cannot be guessed at any speed, and a
 * slow hash would cost milliseconds of CPU on every request. A fast, deterministic digest also lets
 * authentication find the key with one indexed lookup instead of comparing against every key.
 */
export function hashApiKey(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/**
 * Returns the key when `value` looks like a Tollgate key (`sk-` then at least 32 of `[A-Za-z0-9_-]`,
 * at most 200 characters in all), else null. Callers strip `Bearer ` first; nothing is trimmed here.
 */
export function parsePresentedKey(value: string): string | null {
  // The length checks come first so that an oversized value is rejected without scanning it.
  if (value.length > PRESENTED_KEY_MAX_TOTAL) return null;
  if (value.length < API_KEY_PREFIX.length + PRESENTED_KEY_MIN_BODY) return null;
  return PRESENTED_KEY_PATTERN.test(value) ? value : null;
}

/**
 * Compares two digests in constant time. Different lengths return false at once instead of throwing
 * (timingSafeEqual throws a RangeError on them; docs/faults.md#a3): the length of a digest is public.
 */
export function keysEqual(a: Buffer, b: Buffer): boolean {
  if (a.length !== b.length) return false;
  return timingSafeEqual(a, b);
}
