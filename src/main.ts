/** `tollgate serve`: load gateway.yaml, start the gateway, print the first-run key, stop on a signal. */
import { ensureFirstAdmin } from './auth/bootstrap';
import { loadConfigFile } from './config/load';
import { createLogger, startGateway } from './gateway';
import { openStore } from './store/open';

export interface ServeOptions {
  readonly configFile: string;
  readonly port?: number;
}

function firstRunBanner(url: string, key: string): string {
  return [
    '',
    '  Tollgate created the account "admin" and this API key. It is shown once; copy it now:',
    '',
    `    ${key}`,
    '',
    `  Try it:  curl ${url}/v1/chat/completions -H "Authorization: Bearer ${key}" \\`,
    `             -H "content-type: application/json" \\`,
    `             -d '{"model":"tollgate-echo","messages":[{"role":"user","content":"Hello"}]}'`,
    '',
  ].join('\n');
}

/** Runs until SIGTERM or SIGINT, then drains in-flight requests and exits 0. */
export async function serve(options: ServeOptions): Promise<void> {
  const config = loadConfigFile(options.configFile);
  const logger = createLogger();
  const store = openStore(config.store);
  await store.migrate();
  const firstAdmin = await ensureFirstAdmin(store);

  const gateway = await startGateway({ config, store, logger, port: options.port });
  logger.info({ url: gateway.url, config: options.configFile }, 'tollgate is listening');
  if (firstAdmin !== null) {
    // Log lines are written asynchronously: let them out first so the banner is not split by one.
    await new Promise<void>((resolve) => logger.flush(() => resolve()));
    process.stdout.write(`${firstRunBanner(gateway.url, firstAdmin.key)}\n`);
  }

  const shutdown = (signal: string) => {
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    gateway
      .stop()
      .then(() => store.close())
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}
