/**
 * `tollgate serve`: load gateway.yaml, start the gateway (in this process, or in `server.workers`
 * processes under this one), print the first-run key, reload on SIGHUP, stop on SIGTERM or SIGINT.
 */
import { applyAdminPassword, checkAdminPassword, ensureFirstAdmin, FIRST_ADMIN_NAME, type FirstAdmin } from './auth/bootstrap';
import { pidFileFor, removePidFile, writePidFile } from './cli/reload';
import { loadConfigFile } from './config/load';
import { Supervisor, type Listening } from './cluster/supervisor';
import { runWorker } from './cluster/worker';
import { inClusterWorker, workerCount } from './cluster/role';
import type { GatewayConfig } from './config/types';
import { createLogger, startGateway } from './gateway';
import { applyHeapSettings } from './heap-settings';
import { logCatalogLimits } from './catalog/log-limits';
import { logDestination } from './log-destination';
import { openStore } from './store/open';
import { checkSecretKey } from './store/check-secret-key';
import type { Store } from './store/store';
import type { Logger } from 'pino';
import { migrateWhenReachable } from './store-wait';
import { stopAndExit } from './stop-and-exit';

export interface ServeOptions {
  readonly configFile: string;
  readonly port?: number;
  /** Written once the gateway listens, removed on exit; `tollgate reload` reads it. Default: one per
   * instance, data/tollgate-<port>.pid under `cwd`. */
  readonly pidFile?: string;
  /** Where relative defaults (the pid file) resolve; the process's working directory by default. */
  readonly cwd?: string;
}

/** Where the server listens, said plainly: every interface is reachable from the network. */
export function listenDescription(host: string, port: number): string {
  const everywhere = host === '0.0.0.0' || host === '::' || host === '[::]';
  const shown = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  if (everywhere) return `${shown}:${port} (every interface: the API and the console are reachable from the network)`;
  if (host === '127.0.0.1' || host === '::1' || host === 'localhost') return `${shown}:${port} (this machine only; set server.host to open it)`;
  return `${shown}:${port}`;
}

function firstRunBanner(url: string, listening: string, { key, generatedPassword }: FirstAdmin): string {
  const password = generatedPassword ?? '(the one in TOLLGATE_ADMIN_PASSWORD)';
  return [
    '',
    `  Listening on ${listening}`,
    '',
    '  Tollgate created the account "admin" and this API key. It is shown once; copy it now:',
    '',
    `    ${key}`,
    '',
    `  Console:  ${url}/console   log in as "admin" with the password ${password}`,
    ...(generatedPassword === null ? [] : ['            (shown once; change it under Account, or set TOLLGATE_ADMIN_PASSWORD)']),
    '',
    `  Try it:  curl ${url}/v1/chat/completions -H "Authorization: Bearer ${key}" \\`,
    `             -H "content-type: application/json" \\`,
    `             -d '{"model":"tollgate-echo","messages":[{"role":"user","content":"Hello"}]}'`,
    '',
  ].join('\n');
}

/** Runs until SIGTERM or SIGINT, then drains in-flight requests and exits 0. SIGHUP reloads the config file. */
export async function serve(options: ServeOptions): Promise<void> {
  const config = loadConfigFile(options.configFile);
  applyHeapSettings(config.server);
  if (inClusterWorker()) return runWorker(options, config);
  const destination = logDestination();
  process.once('exit', () => destination.flush());
  const logger = createLogger(destination.stream);
  logCatalogLimits(config, logger);
  const store = openStore(config.store);
  // A store that is not up yet is waited for, with /readyz saying so, rather than a crash loop.
  const stopping = new AbortController();
  const stopWaiting = () => stopping.abort();
  process.once('SIGTERM', stopWaiting).once('SIGINT', stopWaiting);
  const port = options.port ?? config.server.port;
  if (!(await migrateWhenReachable(store, { host: config.server.host, port }, logger, stopping.signal))) {
    await store.close();
    process.exit(0);
  }
  process.off('SIGTERM', stopWaiting).off('SIGINT', stopWaiting);
  // Here, once, before any worker exists: a key that opens nothing stops every instance alike.
  await checkSecretKey(store, logger);
  const adminPassword = process.env.TOLLGATE_ADMIN_PASSWORD || undefined;
  if (adminPassword !== undefined) checkAdminPassword(adminPassword);
  // Once, here, before any worker exists: the first password is generated and printed once.
  const firstAdmin = await ensureFirstAdmin(store, { password: adminPassword });
  if (firstAdmin === null && adminPassword !== undefined) {
    const outcome = await applyAdminPassword(store, adminPassword);
    if (outcome !== 'unchanged') logger.info({ account: FIRST_ADMIN_NAME, outcome }, 'console: admin password set from TOLLGATE_ADMIN_PASSWORD');
  }

  const workers = workerCount(config.server.workers);
  const served = workers === 1 ? await serveAlone(options, config, store, logger) : await superviseWorkers(workers, options, config, store, logger);
  const pidFile = options.pidFile ?? pidFileFor(options.cwd ?? process.cwd(), served.port);
  writePidFile(pidFile, options.configFile);
  process.once('exit', () => removePidFile(pidFile));

  // Said last, once signals are handled and the pid file exists: whoever waits for this line can
  // reload the server at once.
  const listening = listenDescription(config.server.host, served.port);
  logger.info({ url: served.url, listen: listening, config: options.configFile, ...(workers > 1 && { workers }) }, 'tollgate is listening');
  if (firstAdmin !== null) destination.print(`${firstRunBanner(served.url, listening, firstAdmin)}\n`);
}

/** `server.workers: 1`: this process serves, and handles the signals itself. */
async function serveAlone(options: ServeOptions, config: GatewayConfig, store: Store, logger: Logger): Promise<Listening> {
  const gateway = await startGateway({ config, configFile: options.configFile, store, logger, port: options.port });
  const shutdown = (signal: string) => stopAndExit(gateway, store, logger, signal);
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
  // The handler goes in before the pid file exists: SIGHUP's default action would end the process.
  process.on('SIGHUP', () => {
    logger.info({ signal: 'SIGHUP', config: options.configFile }, 'reloading the config file');
    // reload() logs its own outcome and never rejects.
    void gateway.reload();
  });
  return gateway;
}

/**
 * `server.workers` above 1: this process is the primary. The store it bootstrapped is the workers' to
 * use; it forks them, relays SIGHUP to each and, on SIGTERM or SIGINT, exits after the last has drained.
 */
async function superviseWorkers(workers: number, options: ServeOptions, config: GatewayConfig, store: Store, logger: Logger): Promise<Listening> {
  await store.close();
  // The grace periods as the workers last read them, so a straggler is not ended before its own deadline.
  let server = config.server;
  const supervisor = new Supervisor({ workers, logger, drainMs: () => server.shutdown_unready_ms + server.shutdown_grace_ms });
  let stopped = false;
  const shutdown = (signal: string) => {
    if (stopped) return;
    stopped = true;
    logger.info({ signal, workers }, 'shutting down: every worker finishes its in-flight requests');
    void supervisor.stop(signal).then(() => process.exit(0));
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGHUP', () => {
    logger.info({ signal: 'SIGHUP', workers }, 'reloading the config file in every worker');
    supervisor.reload();
    try {
      server = loadConfigFile(options.configFile).server;
    } catch {
      // The workers refuse the file and say why; they keep their config, so the primary keeps its too.
    }
  });
  try {
    return await supervisor.start();
  } catch (err) {
    logger.error({ err }, 'tollgate could not start its workers');
    await supervisor.stop('startup failure');
    process.exit(1);
  }
}
