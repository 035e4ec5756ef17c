/**
 * What outboxes on this disk still hold for the store, read without taking their locks: for
 * `tollgate ledger verify`, which reports them as charges on their way rather than as drift. Looks at
 * the configured folder, its `-<n>` siblings (second processes) and its `worker-<n>` sub-folders.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { LOCK_FILE } from './folder-lock';
import { readRecords } from './record-reader';

export interface OutboxHolding {
  readonly dir: string;
  /** Charges appended and not yet confirmed by the store. */
  readonly charges: number;
  /** Their cost, in nano-units. */
  readonly amount: bigint;
  /** The pid in its lock file: a gateway that is draining it, or one that died (then it waits for a start). */
  readonly owner: number | null;
}

const SEGMENT = /^\d{10}\.log$/;

function folders(configured: string): string[] {
  const base = path.resolve(configured);
  const parent = path.dirname(base);
  const name = path.basename(base);
  const siblings = existsSync(parent) ? readdirSync(parent).filter((entry) => entry === name || new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-\\d+$`).test(entry)) : [];
  const found = siblings.map((entry) => path.join(parent, entry));
  for (const dir of [...found]) {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory() && /^worker-\d+$/.test(entry.name)) found.push(path.join(dir, entry.name));
    }
  }
  return found;
}

function owner(dir: string): number | null {
  try {
    const pid = Number.parseInt(readFileSync(path.join(dir, LOCK_FILE), 'utf8'), 10);
    return Number.isInteger(pid) ? pid : null;
  } catch {
    return null;
  }
}

/** The outboxes under `configured` that hold charges the store has not confirmed. */
export function scanOutboxes(configured: string): OutboxHolding[] {
  const holdings: OutboxHolding[] = [];
  for (const dir of folders(configured)) {
    const drained = new Set<string>();
    const charges = new Map<string, bigint>();
    for (const file of readdirSync(dir).filter((entry) => SEGMENT.test(entry)).sort()) {
      for (const read of readRecords(readFileSync(path.join(dir, file)))) {
        if (!read.ok) continue;
        if (read.record.kind === 'drained') {
          for (const id of (read.record.row as { ids: unknown[] }).ids) if (typeof id === 'string') drained.add(id);
        } else if (read.record.kind === 'charge') {
          const cost = (read.record.row as { cost?: unknown }).cost;
          charges.set(read.record.id, typeof cost === 'bigint' ? cost : 0n);
        }
      }
    }
    let count = 0;
    let amount = 0n;
    for (const [id, cost] of charges) {
      if (drained.has(id)) continue;
      count += 1;
      amount += cost;
    }
    if (count > 0) holdings.push({ dir, charges: count, amount, owner: owner(dir) });
  }
  return holdings;
}
