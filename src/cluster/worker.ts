/**
 * One worker of `server.workers` > 1: serves requests on the listening socket it shares with the
 * other workers, on the store the primary has migrated and bootstrapped. It reloads and stops when the
 * primary says so; the primary alone handles SIGHUP, writes the pid file and prints the banner.
 */
import { AggregatorRegistry } from 'prom-client';
import type { GatewayConfig } from '../config/types';
import { createLogger, startGateway, type Gateway } from '../gateway';
import { logDestination } from '../log-destination';
import { openStore } from '../store/open';
import { stopAndExit } from '../stop-and-exit';
import { primaryChannel } from './primary-channel';
import { workerSlot } from './role';

/** The header naming the worker that answered; sent only when there are several. */
const WORKER_HEADER = 'x-tollgate-worker';

/** A scrape waits for every worker's registry; prom-client gives up on a silent worker after 5 s. */
const METRICS_TIMEOUT_MS = 10_000;

export interface WorkerOptions {
  readonly configFile: string;
  readonly port?: number;
}

/**
 * Serves until the primary says stop. A worker that cannot start (the port is taken, a plugin fails)
 * exits 1 with the reason logged: its open channel to the primary would otherwise keep it alive.
 */
export async function runWorker(options: WorkerOptions, config: GatewayConfig): Promise<void> {
  try {
    await startWorker(options, config);
  } catch (err) {
    console.error(`tollgate: worker ${workerSlot() ?? '?'} could not start: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}

async function startWorker(options: WorkerOptions, config: GatewayConfig): Promise<void> {
  const slot = workerSlot()!;
  const destination = logDestination();
  process.once('exit', () => destination.flush());
  const logger = createLogger(destination.stream).child({ worker: slot });
  // Constructing one makes prom-client answer the primary's metrics collection, from the first moment,
  // so a scrape during a worker's restart is not held up by it.
  new AggregatorRegistry();
  const channel = primaryChannel();
  let gateway: Gateway | null = null;
  let stopSignal: string | null = null;
  const stop = (signal: string) => {
    if (stopSignal !== null) return;
    stopSignal = signal;
    // Still starting: it stops as soon as it is up (below), having served nothing.
    if (gateway !== null) stopAndExit(gateway, store, logger, signal);
  };
  // Ctrl-C reaches every process of the group: a worker starts draining without waiting for the primary's word.
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  // The terminal's hangup reaches the whole group too; the primary reloads every worker, once.
  process.on('SIGHUP', () => undefined);
  channel.onMessage((message) => {
    if (message.tollgate === 'stop') stop(message.signal);
    // reload() logs its own outcome and never rejects. A reload asked while starting is moot: the
    // config was read a moment ago.
    if (message.tollgate === 'reload' && gateway !== null && stopSignal === null) void gateway.reload('SIGHUP');
  });

  const store = openStore(config.store);
  // Already migrated by the primary: this only finds the schema current and prepares this connection.
  await store.migrate();
  const started = await startGateway({ config, configFile: options.configFile, store, logger, port: options.port });
  const worker = String(slot);
  started.server.prependListener('request', (_req, res) => res.setHeader(WORKER_HEADER, worker));
  AggregatorRegistry.setRegistries([started.metrics.registry]);
  started.metrics.scrapeThrough(async () => {
    const answer = await channel.ask((id) => ({ tollgate: 'metrics', id }), METRICS_TIMEOUT_MS);
    if (answer.tollgate !== 'metrics') throw new Error(`unexpected answer "${answer.tollgate}" to a metrics request`);
    if (answer.error !== undefined) throw new Error(`collecting the workers' metrics failed: ${answer.error}`);
    return { body: answer.body, contentType: answer.contentType };
  });
  gateway = started;
  if (stopSignal !== null) return stopAndExit(started, store, logger, stopSignal);
  channel.tell({ tollgate: 'listening', port: started.port, url: started.url });
}
