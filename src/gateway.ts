/**
 * Starting, reloading and stopping one gateway instance: store, plugin chain, Koa app, HTTP server.
 * `serve` (main.ts) wraps this with signals and the console banner; tests and benchmarks call it directly.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino, { type DestinationStream, type Logger } from 'pino';
import { PLUGINS } from '../plugins';
import { loadConfigFile } from './config/load';
import type { GatewayConfig, ServerConfig } from './config/types';
import { liveFunds } from './admin/funds';
import { LoginLimiter } from './admin/login-limiter';
import { createApp } from './kernel/app';
import { buildChain } from './kernel/chain';
import { liveView } from './metrics/live';
import { GatewayMetrics } from './metrics/metrics';
import { Reloader, type ReloadResult } from './reload';
import { PACKAGE_VERSION } from './paths';
import { openStore } from './store/open';
import type { Store } from './store/store';

export interface GatewayOptions {
  readonly config: GatewayConfig;
  /** The file `config` was read from; `reload()` reads it again. Without it there is nothing to reload. */
  readonly configFile?: string;
  /** Reads and validates a config file, throwing ConfigError; `loadConfigFile` over `process.env` by default. */
  readonly loadConfig?: (file: string) => GatewayConfig;
  /** Overrides `server.port`; 0 picks a free port. */
  readonly port?: number;
  /** An open, migrated store; opened from `config.store` when absent (and then closed on stop). */
  readonly store?: Store;
  readonly logger?: Logger;
}

export interface Gateway {
  /** `http://host:port`, the base of every endpoint. */
  readonly url: string;
  readonly port: number;
  readonly server: Server;
  readonly store: Store;
  readonly logger: Logger;
  /** This gateway's metrics registry; it outlives reloads. */
  readonly metrics: GatewayMetrics;
  /**
   * Reads `configFile` again. Invalid: nothing changes and the issues are logged and returned. Valid:
   * new requests run under the new config and a new plugin chain, requests already running finish on
   * the old one, which is closed after the last of them. Concurrent calls run one after the other.
   */
  reload(): Promise<ReloadResult>;
  /**
   * Reports unready at once (`GET /readyz` 503), stops accepting, lets in-flight requests finish up
   * to `graceMs`, then closes plugins and store.
   */
  stop(graceMs?: number): Promise<void>;
}

export type { ReloadChanges, ReloadResult } from './reload';

/** Secrets never reach a log line, whatever a caller puts in it. */
export const LOG_REDACT = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-api-key"]',
  'headers.cookie',
  'api_key',
  '*.api_key',
];

/**
 * The default logger: JSON lines at `LOG_LEVEL` (info), on stdout unless `destination` is given
 * (tests capture lines in memory). Pino's default destination on stdout: lines are formatted on
 * the request's tick, written by sonic-boom; the per-request line goes out after the answer.
 */
export function createLogger(destination?: DestinationStream): Logger {
  const options = {
    level: process.env.LOG_LEVEL ?? 'info',
    redact: { paths: LOG_REDACT, censor: '[REDACTED]' },
    // "info", not 30: read by people and by log tools that do not know pino's numbers.
    formatters: { level: (label: string) => ({ level: label }) },
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}

function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve(server.address() as AddressInfo);
    });
  });
}

/** Boots a gateway and resolves once it is listening. */
export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  const { config } = options;
  const logger = options.logger ?? createLogger();
  const ownsStore = options.store === undefined;
  const store = options.store ?? openStore(config.store);
  if (ownsStore) await store.migrate();

  // One registry per gateway, made before the first chain: every chain a reload builds counts into it.
  const metrics = new GatewayMetrics();
  const reloader = new Reloader({
    config,
    chain: await buildChain(PLUGINS, { config, store, logger, metrics }),
    store,
    logger,
    metrics,
    configFile: options.configFile,
    loadConfig: options.loadConfig ?? ((file) => loadConfigFile(file)),
  });
  metrics.watch(liveView(() => reloader.runtime.current.chain));
  let stopping: Promise<void> | null = null;
  let draining = false;
  const app = createApp(
    reloader.runtime,
    logger,
    { metrics, readiness: { store, runtime: () => reloader.runtime.current, stopping: () => draining } },
    {
      store,
      runtime: reloader.runtime,
      logger,
      funds: liveFunds(reloader.runtime, store),
      loginLimiter: new LoginLimiter(config.console.login_failures_per_window),
      metrics,
      version: PACKAGE_VERSION,
    },
  );

  const server = createServer(
    {
      headersTimeout: config.server.headers_timeout_ms,
      requestTimeout: config.server.request_timeout_ms,
      keepAliveTimeout: config.server.keep_alive_timeout_ms,
    },
    app.callback(),
  );
  const address = await listen(server, options.port ?? config.server.port, config.server.host);
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const shownHost = host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host;

  async function stop(graceMs = 10_000): Promise<void> {
    // First thing: readiness answers 503 from now on, so a load balancer stops sending (RELIABILITY.md H1).
    draining = true;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Keep-alive sockets that go idle once their request finishes would hold close() open until the
    // grace period ends: close them as they go idle.
    server.closeIdleConnections();
    const sweeper = setInterval(() => server.closeIdleConnections(), 50);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)));
    await Promise.race([closed, deadline]);
    clearInterval(sweeper);
    clearTimeout(timer);
    server.closeAllConnections();
    await reloader.close();
    if (ownsStore) await store.close();
  }

  async function reload(): Promise<ReloadResult> {
    const result = await reloader.reload();
    applyServerTimeouts(server, reloader.runtime.current.config.server);
    app.proxy = reloader.runtime.current.config.server.trust_proxy;
    return result;
  }

  return {
    url: `http://${shownHost}:${address.port}`,
    port: address.port,
    server,
    store,
    logger,
    metrics,
    reload,
    stop: (graceMs) => (stopping ??= stop(graceMs)),
  };
}

/** The server timeouts apply live: node reads them from the server object as connections need them. */
function applyServerTimeouts(server: Server, config: ServerConfig): void {
  server.headersTimeout = config.headers_timeout_ms;
  server.requestTimeout = config.request_timeout_ms;
  server.keepAliveTimeout = config.keep_alive_timeout_ms;
}
