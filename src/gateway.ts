/**
 * Starting, reloading and stopping one gateway instance: store, plugin chain, Koa app, HTTP server.
 * `serve` (main.ts) wraps this with signals and the console banner; tests and benchmarks call it directly.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino, { type DestinationStream, type Logger } from 'pino';
import { PLUGINS } from '../plugins';
import { SettledCharges } from './billing/settled';
import { stopTokenizer } from './billing/tokenizer';
import { loadConfigFile } from './config/load';
import type { GatewayConfig, ServerConfig } from './config/types';
import { liveFunds } from './admin/funds';
import { LoginLimiter } from './admin/login-limiter';
import { OpenSockets } from './http/websocket/open-sockets';
import { ActiveStreams } from './kernel/active-streams';
import { RefusalRecorder } from './http/refusal-recorder';
import { applyProxySettings, createApp } from './app';
import { buildChain } from './kernel/chain';
import { liveView } from './metrics/live';
import { GatewayMetrics } from './metrics/metrics';
import { Reloader, type ReloadResult } from './reload';
import { PACKAGE_VERSION } from './paths';
import { AutoRecharge } from './payments/auto-recharge';
import { Payments } from './payments/payments';
import { startReconcileJob } from './payments/reconcile-job';
import { openStore } from './store/open';
import { writeInBackground } from './store/sqlite-background-writes';
import { checkSecretKey } from './store/check-secret-key';
import { keyFileOf } from './auth/secret-key';
import { SqliteStore } from './store/sqlite';
import { storeFiles, warnIfReadableByOthers } from './private-files';
import { openMetricsWarning } from './metrics/open-metrics-warning';
import { tracesSettings } from './telemetry/settings';
import type * as ExportingTracing from './telemetry/exporting-tracing';
import { passThroughTracing, type Tracing } from './telemetry/tracing';
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
  /** Where the standard OTEL_* variables are read (tracing); `process.env` by default. */
  readonly env?: Readonly<Record<string, string | undefined>>;
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
  reload(actor?: string): Promise<ReloadResult>;
  /**
   * Reports unready at once (`GET /readyz` 503), keeps accepting for `unreadyMs` so a load balancer
   * sees it, stops accepting, lets in-flight requests finish up to `graceMs`, ends the streams still
   * running with an error event, then closes plugins and store. A number is `graceMs`. The defaults
   * are `server.shutdown_grace_ms` and `server.shutdown_unready_ms`.
   */
  stop(options?: StopOptions | number): Promise<void>;
}

interface StopOptions {
  readonly graceMs?: number;
  readonly unreadyMs?: number;
}

/** How long streams interrupted at the deadline have to get their error event out. */
const STREAM_GOODBYE_MS = 1000;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/**
 * How often node checks connections against the headers and request timeouts. Its default, 30 s,
 * let a 10 s headers timeout fire up to 30 s late (slowloris sockets lived 36 s): check at a tenth
 * of the shorter timeout, at least every second and at most every 50 ms.
 */
function connectionsCheckingInterval(config: ServerConfig): number {
  return Math.min(1000, Math.max(50, Math.floor(Math.min(config.headers_timeout_ms, config.request_timeout_ms) / 10)));
}

export type { ReloadResult } from './reload';

/** Secrets never reach a log line, whatever a caller puts in it. */
const LOG_REDACT = [
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
 * An error as pino writes it, less the raw bytes an HTTP parse error carries (`rawPacket`: the whole
 * request, its token, cookie and body), wherever such an error ends up logged.
 */
function errorWithoutRawBytes(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const serialized = pino.stdSerializers.err(err) as unknown as Record<string, unknown>;
  delete serialized.rawPacket;
  return serialized;
}

/**
 * The default logger: JSON lines at `LOG_LEVEL` (info), on stdout unless `destination` is given
 * (tests capture lines in memory). Pino's default destination on stdout: lines are formatted on
 * the request's tick, written by sonic-boom; the per-request line goes out after the answer.
 */
export function createLogger(destination?: DestinationStream): Logger {
  const options = {
    level: process.env.LOG_LEVEL ?? 'info',
    redact: { paths: LOG_REDACT, censor: '[REDACTED]' },
    serializers: { err: errorWithoutRawBytes },
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
  if (ownsStore) {
    await store.migrate();
    await checkSecretKey(store, logger);
  }
  if (store instanceof SqliteStore) warnIfReadableByOthers(logger, [...storeFiles(store.filename), keyFileOf(store.filename)]);
  // A SQLite file's ledger batches and WAL checkpoints run on a thread of their own, never on the request thread.
  const backgroundWrites = store instanceof SqliteStore && store.durable ? writeInBackground(store, logger) : null;

  // One registry per gateway, made before the first chain: every chain a reload builds counts into it.
  const metrics = new GatewayMetrics(PACKAGE_VERSION);
  // Made before the first chain, like the metrics: every chain's billing tells it of settled charges.
  const settled = new SettledCharges();
  const reloader = new Reloader({
    config,
    chain: await buildChain(PLUGINS, { config, store, logger, metrics, settled, stages: metrics.stages }),
    store,
    logger,
    metrics,
    settled,
    configFile: options.configFile,
    loadConfig: options.loadConfig ?? ((file) => loadConfigFile(file)),
  });
  metrics.watch(liveView(() => reloader.runtime.current.chain));
  const tracing = startTracing(config, options.env ?? process.env, metrics, logger);
  let stopping: Promise<void> | null = null;
  let draining = false;
  const streams = new ActiveStreams();
  const refusals = new RefusalRecorder(store.refusals, logger);
  const sockets = new OpenSockets();
  const funds = liveFunds(reloader.runtime, store);
  const stripeConfig = () => reloader.runtime.current.config.payments.stripe;
  const payments = new Payments({ store, funds, logger, metrics: metrics.payments, config: stripeConfig });
  const reconcileJob = startReconcileJob(payments, store, stripeConfig, logger);
  const autoRecharge = new AutoRecharge(payments, store, funds, logger);
  autoRecharge.start(settled);
  const { app, listener, upgrade } = createApp(
    reloader.runtime,
    logger,
    { metrics, streams, refusals, sockets, readiness: { store, runtime: () => reloader.runtime.current, stopping: () => draining } },
    {
      store,
      runtime: reloader.runtime,
      logger,
      funds,
      payments,
      autoRecharge,
      loginLimiter: new LoginLimiter(config.console.login_failures_per_window),
      metrics,
      version: PACKAGE_VERSION,
    },
    tracing,
  );

  const server = createServer(
    {
      headersTimeout: config.server.headers_timeout_ms,
      requestTimeout: config.server.request_timeout_ms,
      keepAliveTimeout: config.server.keep_alive_timeout_ms,
      connectionsCheckingInterval: connectionsCheckingInterval(config.server),
    },
    listener,
  );
  server.on('upgrade', upgrade);
  const address = await listen(server, options.port ?? config.server.port, config.server.host);
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const shownHost = host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host;
  const metricsWarning = openMetricsWarning({
    address: address.address,
    metricsEnabled: config.plugins.metrics.enabled,
    metricsToken: config.server.metrics_token,
  });
  if (metricsWarning !== null) logger.warn(metricsWarning);

  async function stop(options: StopOptions = {}): Promise<void> {
    const { server: settings } = reloader.runtime.current.config;
    const graceMs = options.graceMs ?? settings.shutdown_grace_ms;
    const unreadyMs = options.unreadyMs ?? settings.shutdown_unready_ms;
    // First thing: readiness answers 503 from now on, so a load balancer stops sending (docs/faults.md#h1);
    // the listener stays open that long, so the balancer's probes get the 503, not a refusal.
    draining = true;
    if (unreadyMs > 0) await sleep(unreadyMs);
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Keep-alive sockets that go idle once their request finishes would hold close() open until the
    // grace period ends: close them as they go idle.
    server.closeIdleConnections();
    // WebSockets are drained as streams are: idle ones close now, busy ones after their response.
    sockets.drain();
    const sweeper = setInterval(() => server.closeIdleConnections(), 50);
    const finishedInTime = await Promise.race([closed.then(() => true), sleep(graceMs).then(() => false)]);
    if (!finishedInTime && streams.size > 0) {
      // Streams still running get their protocol's error event, then the end, rather than a reset;
      // a moment for those last bytes to leave.
      logger.warn({ streams: streams.size }, 'shutdown: ending the streams still running at the deadline');
      streams.interruptAll();
      await Promise.race([closed, sleep(STREAM_GOODBYE_MS)]);
    }
    clearInterval(sweeper);
    reconcileJob.stop();
    await autoRecharge.stop();
    server.closeAllConnections();
    sockets.terminateAll();
    metrics.stop();
    await reloader.close();
    await refusals.close();
    // The last requests' spans go out before the process does (bounded by the export timeout).
    await tracing.shutdown().catch((err: unknown) => logger.warn({ err }, 'tracing: the last spans could not be exported'));
    // After billing's last ledger batch, which it waits for; the store's close then checkpoints what is left.
    await backgroundWrites?.stop();
    if (ownsStore) await store.close();
    // After the plugins closed: billing's last settlements may have needed a count.
    await stopTokenizer();
  }

  async function reload(actor?: string): Promise<ReloadResult> {
    const result = await reloader.reload(actor);
    applyServerTimeouts(server, reloader.runtime.current.config.server);
    applyProxySettings(app, reloader.runtime.current.config.server);
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
    stop: (options) => (stopping ??= stop(typeof options === 'number' ? { graceMs: options } : options)),
  };
}

/** Tracing as gateway.yaml and the OTEL_* variables set it; off (context passed through only) by default. */
function startTracing(config: GatewayConfig, env: Readonly<Record<string, string | undefined>>, metrics: GatewayMetrics, logger: Logger): Tracing {
  const settings = tracesSettings(config.telemetry.traces, env);
  if (settings === null) return passThroughTracing;
  // The URL without its user and password, and never the headers: either may carry a tracing service's key.
  logger.info({ endpoint: withoutCredentials(settings.url), sampleRatio: settings.sampleRatio }, 'tracing: exporting spans over OTLP/HTTP');
  // The OpenTelemetry SDK is loaded only now, by a gateway that exports spans.
  const { exportingTracing } = require('./telemetry/exporting-tracing') as typeof ExportingTracing;
  return exportingTracing(settings, PACKAGE_VERSION, (reason, count) => metrics.spansDropped.inc({ reason }, count));
}

function withoutCredentials(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.toString();
  } catch {
    return '(not a URL)';
  }
}

/** The server timeouts apply live: node reads them from the server object as connections need them. */
function applyServerTimeouts(server: Server, config: ServerConfig): void {
  server.headersTimeout = config.headers_timeout_ms;
  server.requestTimeout = config.request_timeout_ms;
  server.keepAliveTimeout = config.keep_alive_timeout_ms;
}
