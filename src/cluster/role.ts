/**
 * Which part a process plays under `server.workers`: the one process of a single-process server, the
 * primary (store bootstrap, supervision, shared rate limits) or one of its workers (serving requests).
 * A worker is recognised by node:cluster and by the variable the primary sets when it forks, so a
 * process that merely embeds Tollgate inside someone else's cluster is not mistaken for one.
 */
import cluster from 'node:cluster';
import { availableParallelism } from 'node:os';

/** Set by the primary in each worker's environment: the worker's slot, 1..N, and N. */
export const WORKER_SLOT_VARIABLE = 'TOLLGATE_WORKER_SLOT';
export const WORKER_COUNT_VARIABLE = 'TOLLGATE_WORKERS';

/** The worker's slot (1..N) when this process is a Tollgate worker; null otherwise. */
export function workerSlot(): number | null {
  if (!cluster.isWorker) return null;
  const slot = Number(process.env[WORKER_SLOT_VARIABLE]);
  return Number.isInteger(slot) && slot > 0 ? slot : null;
}

/** How many workers the primary runs, as it told this worker; 1 outside a worker. */
export function clusterSize(): number {
  const count = Number(process.env[WORKER_COUNT_VARIABLE]);
  return workerSlot() !== null && Number.isInteger(count) && count > 0 ? count : 1;
}

/** True in a Tollgate worker: state that must hold across processes goes through the store or the primary. */
export function inClusterWorker(): boolean {
  return workerSlot() !== null;
}

/** `server.workers` as a count: "auto" is one per core the process may use. */
export function workerCount(setting: number | 'auto'): number {
  return setting === 'auto' ? availableParallelism() : setting;
}
