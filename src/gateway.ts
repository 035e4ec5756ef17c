/**
 * Starting and stopping one gateway instance: store, plugin chain, Koa app, HTTP server. `serve`
 * (main.ts) wraps this with signals and the console banner; tests and benchmarks call it directly.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino, { type Logger } from 'pino';
import { PLUGINS } from '../plugins';
import type { GatewayConfig } from './config/types';
import { createApp, type RuntimeRef } from './kernel/app';
import { buildChain } from './kernel/chain';
import { openStore } from './store/open';
import type { Store } from './store/store';

export interface GatewayOptions {
  readonly config: GatewayConfig;
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
  /** Stops accepting, lets in-flight requests finish up to `graceMs`, then closes plugins and store. */
  stop(graceMs?: number): Promise<void>;
}

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

/** The default logger: JSON lines on stdout at `LOG_LEVEL` (info). */
export function createLogger(): Logger {
  return pino({ level: process.env.LOG_LEVEL ?? 'info', redact: { paths: LOG_REDACT, censor: '[REDACTED]' } });
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

  const chain = await buildChain(PLUGINS, { config, store, logger });
  const runtime: RuntimeRef = { current: { config, chain } };
  const app = createApp(runtime, logger);

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

  let stopping: Promise<void> | null = null;
  async function stop(graceMs = 10_000): Promise<void> {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    const deadline = new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref());
    await Promise.race([closed, deadline]);
    server.closeAllConnections();
    await chain.close();
    if (ownsStore) await store.close();
  }

  return {
    url: `http://${shownHost}:${address.port}`,
    port: address.port,
    server,
    store,
    logger,
    stop: (graceMs) => (stopping ??= stop(graceMs)),
  };
}
