/**
 * Console passwords: scrypt from node:crypto at OWASP's recommended cost (N = 2^17, r = 8, p = 1),
 * run on libuv's thread pool so a login never blocks the event loop. The stored form names its own
 * parameters (`scrypt$17$8$1$salt$hash`), so the cost can be raised later without breaking old hashes.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { HashQueue } from './hash-queue';

const LOG2_COST = 17;
const BLOCK_SIZE = 8;
const PARALLELISM = 1;
const KEY_BYTES = 32;
const SALT_BYTES = 16;
/** scrypt needs 128 × N × r bytes (128 MiB here); node refuses more than 32 MiB unless told. */
const MAX_MEMORY = 256 * 1024 * 1024;

export const MIN_PASSWORD_LENGTH = 10;
export const MAX_PASSWORD_LENGTH = 256;

/**
 * Every hash of this process goes through one queue: one scrypt at a time (128 MiB, one of libuv's
 * four threads), sixteen waiting (about five seconds of work), the rest refused.
 */
const HASHING = new HashQueue(1, 16);

function derive(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return HASHING.run(
    () =>
      new Promise((resolve, reject) => {
        scrypt(password.normalize('NFC'), salt, KEY_BYTES, { ...options, maxmem: MAX_MEMORY }, (error, key) => (error ? reject(error) : resolve(key)));
      }),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, { N: 2 ** LOG2_COST, r: BLOCK_SIZE, p: PARALLELISM });
  return ['scrypt', LOG2_COST, BLOCK_SIZE, PARALLELISM, salt.toString('base64'), key.toString('base64')].join('$');
}

/** Whether `password` matches `stored`; a hash in an unknown form never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [log2Cost, blockSize, parallelism] = parts.slice(1, 4).map(Number);
  if (![log2Cost, blockSize, parallelism].every(Number.isSafeInteger) || log2Cost > 20) return false;
  const expected = Buffer.from(parts[5], 'base64');
  const key = await derive(password, Buffer.from(parts[4], 'base64'), { N: 2 ** log2Cost, r: blockSize, p: parallelism });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/**
 * A hash that matches no password. Checking a login for an account that does not exist against it
 * takes as long as a real check, so response times do not tell which names exist.
 */
let decoy: Promise<string> | null = null;
export function decoyHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(24).toString('base64'));
  return decoy;
}

/** A password for the operator to hand out (CLI, first run): 20 base62-ish characters, ~119 bits. */
export function generatePassword(): string {
  return randomBytes(15).toString('base64url').slice(0, 20);
}
