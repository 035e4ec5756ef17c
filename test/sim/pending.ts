/**
 * Rules the simulator knows some books break today, each with why. A pending rule's pattern is left out
 * of the generated sequences (or, for a 402 reason, its difference is counted and printed rather than
 * failed), and the simulator says so on every run. An entry goes when the fix lands; `--check <rule>`
 * runs with that one checked and `--strict` with none, which is how the seeds that find each leak on
 * an older build are found.
 */
import type { StoreName } from './books';

export interface PendingRule {
  readonly rule: string;
  readonly stores: readonly StoreName[];
  readonly why: string;
}


const PENDING: readonly PendingRule[] = [];

/** The rules pending for `store`, less those `checked` (every one: `true`). */
export function pendingFor(store: StoreName, checked: readonly string[] | true = []): PendingRule[] {
  return checked === true ? [] : PENDING.filter((entry) => entry.stores.includes(store) && !checked.includes(entry.rule));
}
