/**
 * The key that seals secrets at rest (TOTP shared secrets, sealed-secret.ts): `TOLLGATE_SECRET_KEY`
 * from the environment, 32 bytes as 64 hex digits or base64. Without it, an embedded (SQLite) store
 * keeps a key generated once in a 0600 file beside the database; a PostgreSQL store is shared by
 * instances that must all hold the same key, so it refuses to start without the variable rather than
 * let each instance make its own.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { PRIVATE_FILE_MODE } from '../private-files';

export const SECRET_KEY_VARIABLE = 'TOLLGATE_SECRET_KEY';
const KEY_BYTES = 32;
const HEX_KEY = /^[0-9a-fA-F]{64}$/;
const BASE64_KEY = /^[A-Za-z0-9+/_-]{43}=?$/;
const MAKE_ONE = 'openssl rand -base64 32';

/** A key that is missing, malformed or wrong: a setup problem that waiting or retrying does not fix. */
export class SecretKeyError extends Error {
  override readonly name = 'SecretKeyError';
}

export interface SecretKey {
  readonly key: Buffer;
  /** Where it came from, for messages: the variable's name or the key file's path. */
  readonly source: string;
  /** The key file in use (null: from the environment, or an in-memory store's own). */
  readonly file: string | null;
  /** Whether this process made the key file just now. */
  readonly generated: boolean;
}

/** The 32 bytes written in `text` (hex or base64, surrounding blanks ignored); `source` names it in the error. */
export function parseSecretKey(text: string, source: string): Buffer {
  const written = text.trim();
  const key = HEX_KEY.test(written) ? Buffer.from(written, 'hex') : BASE64_KEY.test(written) ? Buffer.from(written, 'base64') : null;
  // The value is a secret: the message gives its length, never the value.
  if (key === null || key.length !== KEY_BYTES) {
    throw new SecretKeyError(`${source} must be 32 bytes written as 64 hex digits or 44 base64 characters (make one with: ${MAKE_ONE}); it holds ${written.length} characters that are neither`);
  }
  return key;
}

function fromEnvironment(env: NodeJS.ProcessEnv): SecretKey | null {
  const text = env[SECRET_KEY_VARIABLE];
  if (text === undefined || text.trim() === '') return null;
  return { key: parseSecretKey(text, SECRET_KEY_VARIABLE), source: SECRET_KEY_VARIABLE, file: null, generated: false };
}

/** Where an embedded store keeps its generated key: beside the database, so a backup of the folder has both. */
export function keyFileOf(database: string): string {
  return `${database}.secret-key`;
}

/**
 * Makes the key file when there is none and says whether this call made it. The new key is written
 * whole to a temporary file and linked into place, which fails when another process (a CLI command,
 * a second instance) got there first: then its key is the one every process reads.
 */
function makeKeyFileOnce(file: string): boolean {
  if (existsSync(file)) return false;
  const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(draft, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
  try {
    linkSync(draft, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw new SecretKeyError(`cannot make the key file ${file}: ${(error as Error).message}`);
  } finally {
    unlinkSync(draft);
  }
}

function fromKeyFile(file: string): SecretKey {
  const generated = makeKeyFileOnce(file);
  const source = `the key file ${file}`;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new SecretKeyError(`cannot read ${source}: ${(error as Error).message}`);
  }
  return { key: parseSecretKey(text, source), source, file, generated };
}

/** An embedded store's key: the environment's, else its key file's (made once); an in-memory store's own when it has no file. */
export function embeddedStoreKey(database: string | null, env: NodeJS.ProcessEnv): SecretKey {
  const configured = fromEnvironment(env);
  if (configured !== null) return configured;
  // Nothing outlives an in-memory store, so nothing needs its key later.
  if (database === null) return { key: randomBytes(KEY_BYTES), source: 'the in-memory store’s own key', file: null, generated: false };
  return fromKeyFile(keyFileOf(database));
}

/** A shared (PostgreSQL) store's key: the environment's, or a refusal that names the fix. */
export function sharedStoreKey(env: NodeJS.ProcessEnv): SecretKey {
  const configured = fromEnvironment(env);
  if (configured !== null) return configured;
  throw new SecretKeyError(
    `${SECRET_KEY_VARIABLE} is not set: a PostgreSQL store is shared by every instance, and they must all seal TOTP secrets with the same key. ` +
      `Make one with "${MAKE_ONE}" and set ${SECRET_KEY_VARIABLE} to it in every instance's environment`,
  );
}
