/**
 * Validated keys kept in memory so the hot path skips the store. An entry lives at most `ttlMs`, and
 * no entry is served once the store's key revision moves, so a revocation made anywhere (this process,
 * the CLI, another instance) is honoured on the next request.
 *
 * While the store cannot be reached, `lastKnown` still gives what the store last said about a key
 * (stale or not): a key this instance has seen keeps working through a store outage, one it never saw
 * cannot be checked. A key the store later calls unknown is forgotten (`forget`).
 *
 * Entries are found by the key as presented, not by its hash: a hit then costs a map lookup instead
 * of a SHA-256 per request. The cache holds only keys already found valid, in the memory of the
 * process that receives them in every request anyway; the store still keeps only hashes.
 */
import type { KeyIdentity } from '../store/store';

interface Entry {
  readonly identity: KeyIdentity;
  readonly expiresAt: number;
  /** The key revision it was found valid under. */
  readonly revision: number;
}

export class KeyCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
  ) {}

  /** The cached identity for a presented key, if still valid under `revision`. */
  get(presented: string, revision: number, now: number): KeyIdentity | null {
    const entry = this.entries.get(presented);
    if (entry === undefined || entry.revision !== revision || entry.expiresAt <= now) return null;
    return entry.identity;
  }

  /** What the store last said about a presented key, however old: only for when it cannot be asked. */
  lastKnown(presented: string): KeyIdentity | null {
    return this.entries.get(presented)?.identity ?? null;
  }

  /** The store no longer knows this key. */
  forget(presented: string): void {
    this.entries.delete(presented);
  }

  /** Remembers `identity` as the one behind `presented`, which the caller found valid under `revision`. */
  set(presented: string, identity: KeyIdentity, revision: number, now: number): void {
    // Map iteration order is insertion order: the first key is the oldest entry.
    this.entries.delete(presented);
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(presented, { identity, expiresAt: now + this.ttlMs, revision });
  }

  clear(): void {
    this.entries.clear();
  }
}
