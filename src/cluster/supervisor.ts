/**
 * The primary of `server.workers` > 1: forks the workers, which share the listening socket
 * (node:cluster), and looks after them. It answers their rate-limit questions (one LimitService for
 * all) and their metrics scrapes (prom-client's aggregate of every worker), relays SIGHUP as a reload
 * to each, and on SIGTERM or SIGINT tells each to drain and exits after the last. A worker that dies
 * while serving is forked again after a delay that doubles with each quick death, so a crash loop
 * costs a fork every half minute at most, not a spinning CPU.
 */
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { AggregatorRegistry } from 'prom-client';
import { LimitService } from './limit-service';
import { isTollgateMessage, type PrimaryMessage, type WorkerMessage } from './messages';
import { WORKER_COUNT_VARIABLE, WORKER_SLOT_VARIABLE } from './role';

const FIRST_RESTART_DELAY_MS = 500;
const MAX_RESTART_DELAY_MS = 30_000;
/** A worker that served this long before dying was not crash-looping: its replacement starts at once. */
const STABLE_AFTER_MS = 60_000;
/** Beyond the workers' own grace: then the primary ends what is left. */
const STOP_MARGIN_MS = 5_000;

export interface Listening {
  readonly url: string;
  readonly port: number;
}

export interface SupervisorOptions {
  readonly workers: number;
  readonly logger: Logger;
  /** How long a worker may take to drain (shutdown_unready_ms + shutdown_grace_ms), before the margin. */
  readonly drainMs: () => number;
}

interface Slot {
  readonly slot: number;
  worker: Worker | null;
  listeningSince: number | null;
  restartDelayMs: number;
  restartTimer: NodeJS.Timeout | null;
}

export class Supervisor {
  private readonly slots: Slot[];
  private readonly limits = new LimitService();
  private readonly aggregator = new AggregatorRegistry();
  private listening: Listening | null = null;
  /** Every worker has listened once: from then on a death is a crash to restart from. */
  private allListened = false;
  private stopping = false;
  private started!: { resolve: (listening: Listening) => void; reject: (error: Error) => void };

  constructor(private readonly options: SupervisorOptions) {
    this.slots = Array.from({ length: options.workers }, (_, i) => ({
      slot: i + 1,
      worker: null,
      listeningSince: null,
      restartDelayMs: FIRST_RESTART_DELAY_MS,
      restartTimer: null,
    }));
  }

  /** Forks every worker; resolves once all of them listen, rejects when one dies before that. */
  start(): Promise<Listening> {
    const started = new Promise<Listening>((resolve, reject) => (this.started = { resolve, reject }));
    for (const slot of this.slots) this.fork(slot);
    return started;
  }

  /** Tells every worker to read the config file again. */
  reload(): void {
    for (const slot of this.slots) this.send(slot.worker, { tollgate: 'reload' });
  }

  /** Tells every worker to drain and resolves once the last has exited; ends the stragglers after their grace. */
  stop(signal: string): Promise<void> {
    this.stopping = true;
    for (const slot of this.slots) {
      if (slot.restartTimer !== null) clearTimeout(slot.restartTimer);
      slot.restartTimer = null;
      this.send(slot.worker, { tollgate: 'stop', signal });
    }
    const deadline = setTimeout(() => {
      for (const slot of this.slots) {
        if (slot.worker === null) continue;
        this.options.logger.warn({ worker: slot.slot, workerPid: slot.worker.process.pid }, 'shutdown: a worker outlived its grace period; ending it');
        slot.worker.process.kill('SIGKILL');
      }
    }, this.options.drainMs() + STOP_MARGIN_MS);
    deadline.unref();
    return new Promise((resolve) => {
      const check = () => {
        if (this.slots.some((slot) => slot.worker !== null)) return;
        clearTimeout(deadline);
        cluster.off('exit', check);
        resolve();
      };
      cluster.on('exit', check);
      check();
    });
  }

  private fork(slot: Slot): void {
    slot.restartTimer = null;
    const worker = cluster.fork({ [WORKER_SLOT_VARIABLE]: String(slot.slot), [WORKER_COUNT_VARIABLE]: String(this.options.workers) });
    slot.worker = worker;
    slot.listeningSince = null;
    worker.on('message', (message: unknown) => {
      if (isTollgateMessage<WorkerMessage>(message)) this.receive(slot, worker, message);
    });
    worker.on('exit', (code, signal) => this.exited(slot, worker, code, signal));
  }

  private receive(slot: Slot, worker: Worker, message: WorkerMessage): void {
    switch (message.tollgate) {
      case 'listening':
        slot.listeningSince = Date.now();
        this.listening ??= { url: message.url, port: message.port };
        if (!this.allListened && this.slots.every((each) => each.listeningSince !== null)) {
          this.allListened = true;
          this.started.resolve(this.listening);
        }
        return;
      case 'limit-acquire':
        this.send(worker, { tollgate: 'limit-decision', id: message.id, decision: this.limits.acquire(worker.id, message.request) });
        return;
      case 'limit-release':
        this.limits.release(worker.id, message.admission, message.actualTokens);
        return;
      case 'metrics':
        this.aggregator.clusterMetrics().then(
          (body) => this.send(worker, { tollgate: 'metrics', id: message.id, body, contentType: this.aggregator.contentType }),
          (error: unknown) =>
            this.send(worker, { tollgate: 'metrics', id: message.id, body: '', contentType: '', error: error instanceof Error ? error.message : String(error) }),
        );
        return;
    }
  }

  private exited(slot: Slot, worker: Worker, code: number | null, signal: string | null): void {
    if (slot.worker === worker) slot.worker = null;
    const freed = this.limits.workerGone(worker.id);
    if (this.stopping) return;
    const { logger } = this.options;
    if (!this.allListened) {
      // Dying before the server ever listened is a configuration or startup problem, not a crash to
      // retry: the caller stops the others and exits.
      this.started.reject(new Error(`worker ${slot.slot} exited before listening (exit code ${code ?? 'none'}, signal ${signal ?? 'none'})`));
      return;
    }
    const served = slot.listeningSince === null ? 0 : Date.now() - slot.listeningSince;
    if (served >= STABLE_AFTER_MS) slot.restartDelayMs = FIRST_RESTART_DELAY_MS;
    const delay = slot.restartDelayMs;
    slot.restartDelayMs = Math.min(MAX_RESTART_DELAY_MS, delay * 2);
    logger.error(
      { worker: slot.slot, workerPid: worker.process.pid, code, signal, restartInMs: delay, rateLimitSlotsFreed: freed },
      `worker ${slot.slot} exited unexpectedly; starting a new one in ${delay} ms`,
    );
    slot.restartTimer = setTimeout(() => this.fork(slot), delay);
  }

  private send(worker: Worker | null, message: PrimaryMessage): void {
    if (worker === null || !worker.isConnected()) return;
    worker.send(message, undefined, () => undefined);
  }
}
