/**
 * The console playground's key: the one POST /api/playground/key makes for the signed-in account, named
 * "Playground" and living an hour. Its rule lives here, once, for the route that replaces it on each
 * visit and the view that flags it (so the Tokens page can leave it out).
 */
import type { ApiKeyRecord } from '../store/store';

export const PLAYGROUND_KEY_NAME = 'Playground';
export const PLAYGROUND_KEY_TTL_MS = 60 * 60 * 1000;
/** Far more than a key takes to be stored. */
const CREATION_MARGIN_MS = 60 * 1000;

/** Whether a key is a playground key: the playground's name, and an expiry no more than the TTL after it was made. */
export function isPlaygroundKey(key: Pick<ApiKeyRecord, 'name' | 'createdAt' | 'expiresAt'>): boolean {
  return key.name === PLAYGROUND_KEY_NAME && key.expiresAt !== null && key.expiresAt.getTime() - key.createdAt.getTime() <= PLAYGROUND_KEY_TTL_MS;
}

/**
 * Whether a key someone asks for by hand would pass for a playground key (and so be hidden from Tokens
 * and revoked by the next playground visit): refused, so the rule above never catches a key of theirs.
 */
export function passesForPlaygroundKey(name: string | null, expiresAt: Date | null, now: Date): boolean {
  // The key is made a moment after this check, so its life is a little shorter than from `now`.
  return isPlaygroundKey({ name, createdAt: new Date(now.getTime() - CREATION_MARGIN_MS), expiresAt });
}
