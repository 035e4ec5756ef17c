/** How a serving process ends on SIGTERM or SIGINT, alone or as one of the workers. */
import type { Logger } from 'pino';
import type { Gateway } from './gateway';
import type { Store } from './store/store';

/** Runs the gateway's graceful stop (its own grace period), closes the store, and exits: 0, or 1 if stopping failed. */
export function stopAndExit(gateway: Gateway, store: Store, logger: Logger, signal: string): void {
  logger.info({ signal }, 'shutting down: finishing in-flight requests');
  gateway
    .stop()
    .then(() => store.close())
    .then(() => process.exit(0))
    .catch((err: unknown) => {
      logger.error({ err }, 'shutdown failed');
      process.exit(1);
    });
}
