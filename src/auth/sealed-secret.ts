/**
 * A secret sealed at rest (a TOTP shared secret): AES-256-GCM under the store's secret key, written
 * `v1:<iv>:<tag>:<ciphertext>`, each part base64url. What it belongs to (the account id) is the
 * associated data, so a sealed value copied onto another row does not open there. The version
 * prefix leaves room for another cipher or key later without guessing what a value is.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const CIPHER = 'aes-256-gcm';
/** 96 bits, GCM's own size; random per value, so one key seals many values safely. */
const IV_BYTES = 12;
const TAG_BYTES = 16;
const SEALED = /^v1:([A-Za-z0-9_-]{16}):([A-Za-z0-9_-]{22}):([A-Za-z0-9_-]*)$/;

/** Whether `value` has the sealed form (it may still not open: another key, a changed byte). */
export function isSealed(value: string): boolean {
  return SEALED.test(value);
}

/** `plaintext` sealed under `key` (32 bytes) for `context`. */
export function seal(key: Buffer, plaintext: string, context: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(CIPHER, key, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join(':');
}

/**
 * The plaintext of `sealed`, or null when it is not a sealed value or does not open under `key` for
 * `context` (the wrong key, another row's value, a changed byte): the caller says which in its words.
 */
export function unseal(key: Buffer, sealed: string, context: string): string | null {
  const parts = SEALED.exec(sealed);
  if (parts === null) return null;
  const decipher = createDecipheriv(CIPHER, key, Buffer.from(parts[1], 'base64url'), { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(Buffer.from(parts[2], 'base64url'));
  try {
    return Buffer.concat([decipher.update(Buffer.from(parts[3], 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}
