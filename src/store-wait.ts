/**
 * Boot when the store is not there yet (PostgreSQL still starting, a network blip): instead of
 * exiting and leaving a supervisor to restart it in a loop, `serve` keeps trying the store with a
 * growing pause, and meanwhile answers on its port: `/healthz` 200 (the process is alive), `/readyz`
 * and every other path 503 with `retry-after`, in JSON. A SIGTERM while waiting exits cleanly.
 */
import { createServer, type Server } from 'node:http';
import type { Logger } from 'pino';
import { SecretKeyError } from './auth/secret-key';
import type { Store } from './store/store';

const FIRST_PAUSE_MS = 500;
const LONGEST_PAUSE_MS = 10_000;

function waitingServer(): Server {
  return createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const alive = path === '/healthz';
    res.writeHead(alive ? 200 : 503, { 'content-type': 'application/json', ...(alive ? {} : { 'retry-after': '5' }) });
    res.end(
      JSON.stringify(
        alive
          ? { status: 'ok' }
          : path === '/readyz'
            ? { status: 'unavailable', checks: { store: 'failed' } }
            : { error: { message: 'The gateway is starting: its store is not reachable yet.', type: 'service_unavailable_error', param: null, code: 'starting' } },
      ),
    );
    req.resume();
  });
}

/**
 * Migrates the store, retrying until it answers. Serves the waiting answers on `host:port` only once
 * the first attempt has failed, and frees the port before resolving, so the gateway can listen there.
 */
export async function migrateWhenReachable(store: Store, listen: { host: string; port: number }, logger: Logger, stopping: AbortSignal): Promise<boolean> {
  let server: Server | null = null;
  let pause = FIRST_PAUSE_MS;
  for (;;) {
    try {
      await store.migrate();
      if (server !== null) await new Promise<void>((resolve) => server!.close(() => resolve()));
      return true;
    } catch (error) {
      // A missing or malformed key is not a store that is still starting: waiting will not fix it.
      if (error instanceof SecretKeyError) {
        if (server !== null) await new Promise<void>((resolve) => server!.close(() => resolve()));
        throw error;
      }
      if (server === null) {
        server = waitingServer();
        await new Promise<void>((resolve, reject) => server!.once('error', reject).listen(listen.port, listen.host, resolve));
      }
      logger.warn({ err: error, retryInMs: pause }, 'the store is not reachable yet; /readyz answers 503 until it is');
    }
    const resumed = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(true), pause);
      stopping.addEventListener('abort', () => (clearTimeout(timer), resolve(false)), { once: true });
    });
    if (!resumed) {
      if (server !== null) await new Promise<void>((resolve) => server!.close(() => resolve()));
      return false;
    }
    pause = Math.min(LONGEST_PAUSE_MS, pause * 2);
  }
}
