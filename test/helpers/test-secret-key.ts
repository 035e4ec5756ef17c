/**
 * The fixed TOLLGATE_SECRET_KEY of the test runs. Importing this sets it in this process's
 * environment when it is not set already: a PostgreSQL store refuses to migrate without it, and
 * every suite on the shared database must seal with the same key. Children started with a bare
 * environment are given it explicitly (`TEST_SECRET_ENV`).
 */
import { SECRET_KEY_VARIABLE } from '../../src/auth/secret-key';

/** 32 bytes, base64: the form `openssl rand -base64 32` prints. */
export const TEST_SECRET_KEY = 'dG9sbGdhdGUtdGVzdHMtZml4ZWQtc2VjcmV0LWtleSE=';

process.env[SECRET_KEY_VARIABLE] ??= TEST_SECRET_KEY;

/** For a child's bare environment. */
export const TEST_SECRET_ENV = { [SECRET_KEY_VARIABLE]: TEST_SECRET_KEY } as const;
