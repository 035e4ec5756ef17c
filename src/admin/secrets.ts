/**
 * The secrets of console sessions and management tokens. Like API keys, only their SHA-256 is
 * stored: a copy of the database opens no session. The CSRF token is derived from the session's
 * secret, so it needs no storage and is unknown to anyone who cannot read the HttpOnly cookie.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export const SESSION_COOKIE = 'tollgate_session';
/** Management tokens start with this, so they are told apart from API keys (`sk-`) at a glance. */
export const MANAGEMENT_TOKEN_PREFIX = 'tgm_';

/** 256 random bits. */
function randomSecret(): string {
  return randomBytes(32).toString('base64url');
}

export function newSessionSecret(): string {
  return randomSecret();
}

export function newManagementToken(): string {
  return MANAGEMENT_TOKEN_PREFIX + randomSecret();
}

/** Invitation links carry this, so a pasted one is told apart from a token or a key. */
export const INVITATION_PREFIX = 'tgi_';

export function newInvitationSecret(): string {
  return INVITATION_PREFIX + randomSecret();
}

export function hashSecret(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

export function csrfTokenFor(sessionSecret: string): string {
  return createHash('sha256').update(`tollgate-csrf\0${sessionSecret}`, 'utf8').digest('base64url');
}

export function csrfTokenMatches(sessionSecret: string, presented: string): boolean {
  const expected = Buffer.from(csrfTokenFor(sessionSecret));
  const given = Buffer.from(presented);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Whether a cookie or bearer value could be one of ours at all: bounded, URL-safe characters. */
export function plausibleSecret(value: string): boolean {
  return value.length >= 32 && value.length <= 100 && /^[A-Za-z0-9_-]+$/.test(value);
}

/** A management token's lifetime when its owner names none. */
export const DEFAULT_TOKEN_DAYS = 90;
