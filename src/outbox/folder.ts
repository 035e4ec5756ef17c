/**
 * Where this process keeps its outbox: `billing.outbox_path`, or a sub-folder of it per worker under
 * `server.workers`, since every process needs one of its own.
 */
import path from 'node:path';
import { workerSlot } from '../cluster/role';

export function outboxFolder(configured: string): string {
  const slot = workerSlot();
  return path.resolve(slot === null ? configured : path.join(configured, `worker-${slot}`));
}
