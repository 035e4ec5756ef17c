/**
 * Before a gateway listens: every TOTP secret in the store opens with its key (a gateway started
 * with another key would lock those accounts out and seal new ones under a key the others lack),
 * and, when the key lives in a file beside an SQLite database, the log says where, and that it was
 * made now the first time.
 */
import type { Logger } from 'pino';
import { SECRET_KEY_VARIABLE } from '../auth/secret-key';
import { SqliteStore } from './sqlite';
import type { Store } from './store';

export async function checkSecretKey(store: Store, logger: Logger): Promise<void> {
  await store.verifySecretKey();
  if (!(store instanceof SqliteStore) || store.secretKey.file === null) return;
  const { file, generated } = store.secretKey;
  logger.info(
    { keyFile: file, generated },
    generated
      ? `generated the key that seals TOTP secrets into ${file} (0600): back it up with the database, or set ${SECRET_KEY_VARIABLE} to its contents`
      : `TOTP secrets are sealed with the key in ${file} (${SECRET_KEY_VARIABLE} is not set)`,
  );
}
