/**
 * The outboxes this process has open. A second process given a path already in use takes the first
 * free of `<path>-2`, `<path>-3` and so on: instances sharing a working directory share the store too,
 * so whichever of them restarts first drains what a dead one left. Within a process an outbox is
 * shared by reference count, so the plugin chains of a config reload use the same one.
 */
import path from 'node:path';
import { OutboxInUseError } from './folder-lock';
import { Outbox, type OutboxOptions } from './outbox';

/** Folders tried after the configured one is in use by another process. */
const SIBLING_FOLDERS = 64;

/** Outboxes open in this process, by folder: a config reload's new plugin chain shares the running one. */
const shared = new Map<string, { outbox: Outbox; users: number }>();

/** The outbox at `dir` (or the first free sibling), shared within the process. */
export function acquireOutbox(dir: string, options: OutboxOptions): Outbox {
  const resolved = path.resolve(dir);
  let entry = shared.get(resolved);
  if (entry === undefined) shared.set(resolved, (entry = { outbox: openFree(resolved, options), users: 0 }));
  entry.users += 1;
  return entry.outbox;
}

function openFree(dir: string, options: OutboxOptions): Outbox {
  for (let index = 1; ; index++) {
    const candidate = index === 1 ? dir : `${dir}-${index}`;
    try {
      return Outbox.open(candidate, options);
    } catch (error) {
      if (!(error instanceof OutboxInUseError) || index >= SIBLING_FOLDERS) throw error;
    }
  }
}

export async function releaseOutbox(outbox: Outbox): Promise<void> {
  const found = [...shared].find(([, entry]) => entry.outbox === outbox);
  if (found === undefined) return outbox.close();
  const [dir, entry] = found;
  entry.users -= 1;
  if (entry.users > 0) return;
  shared.delete(dir);
  await outbox.close();
}
