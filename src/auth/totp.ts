/**
 * Two-factor sign-in codes: TOTP (RFC 6238: HMAC-SHA-1, 6 digits, 30-second steps, as every
 * authenticator app reads an `otpauth://` URI), through the `otpauth` library; the QR code that
 * carries the URI to the phone, through `qrcode`; and one-time recovery codes.
 */
import { randomBytes } from 'node:crypto';
import type * as OtpAuth from 'otpauth';
import type * as QrCode from 'qrcode';
import { onFirstUse } from '../on-first-use';

/**
 * Loaded by the first enrolment or sign-in with a second factor: a gateway serving requests never
 * needs them, and together (qrcode brings pngjs) they are about 60 modules resident for nothing.
 */
const otpauth = onFirstUse(() => require('otpauth') as typeof OtpAuth);
const qrcode = onFirstUse(() => require('qrcode') as typeof QrCode);

const PERIOD_SECONDS = 30;
const DIGITS = 6;
/** Codes of the step before and after are taken too: a phone's clock a little off still works. */
const WINDOW_STEPS = 1;
const RECOVERY_CODE_COUNT = 10;

/** A new shared secret (160 bits, RFC 4226's recommendation), base32. */
export function newTotpSecret(): string {
  return new (otpauth().Secret)({ size: 20 }).base32;
}

/** The `otpauth://totp/…` URI an authenticator app enrols from. */
export function totpUri(secret: string, accountName: string, issuer: string): string {
  const { Secret, TOTP } = otpauth();
  return new TOTP({ issuer, label: accountName, secret: Secret.fromBase32(secret), period: PERIOD_SECONDS, digits: DIGITS, algorithm: 'SHA1' }).toString();
}

/**
 * The time step `code` belongs to when it is a valid code at `now` (within one step either side),
 * else null. The caller accepts each step once, so a code seen by someone else cannot be replayed.
 */
export function totpStep(secret: string, code: string, now: number): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const { Secret, TOTP } = otpauth();
  const delta = TOTP.validate({ token: code, secret: Secret.fromBase32(secret), period: PERIOD_SECONDS, digits: DIGITS, timestamp: now, window: WINDOW_STEPS });
  if (delta === null) return null;
  return TOTP.counter({ period: PERIOD_SECONDS, timestamp: now }) + delta;
}

/** The QR code of `text` as its modules, row by row ('1' dark): the console draws it without any HTML string. */
export function qrModules(text: string): { size: number; modules: string } {
  const { modules } = qrcode().create(text, { errorCorrectionLevel: 'M' });
  let bits = '';
  for (let i = 0; i < modules.data.length; i += 1) bits += modules.data[i] === 0 ? '0' : '1';
  return { size: modules.size, modules: bits };
}

/** Recovery codes as shown once (`abcde-fghij`, 50 bits each); stored only as hashes of `normalizeRecoveryCode`. */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const text = randomBytes(10).toString('base64url').replace(/[-_]/g, 'x').toLowerCase().slice(0, 10);
    return `${text.slice(0, 5)}-${text.slice(5)}`;
  });
}

/** A recovery code as typed (any case, with or without the dash or spaces) in the form that is hashed. */
export function normalizeRecoveryCode(typed: string): string {
  return typed.toLowerCase().replace(/[\s-]/g, '');
}
