/**
 * Validated keys kept in memory so the hot path skips the store. An entry lives at most `ttlMs`, and
 * the whole cache empties the moment the store's key revision moves, so a revocation made anywhere
 * (this process, the CLI, another instance) is honoured on the next request.
 *
 * Entries are found by the key as presented, not by its hash: a hit then costs a map lookup instead
 * of a SHA-256 per request. The cache holds only keys already found valid, in the memory of the
 * process that receives them in every request anyway; the store still keeps only hashes.
 */
import type { KeyIdentity } from '../store/store';

interface Entry {
  readonly identity: KeyIdentity;
  readonly expiresAt: number;
}

export class KeyCache {
  private readonly entries = new Map<string, Entry>();
  private revision: number | null = null;

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
  ) {}

  /** The cached identity for a presented key, if still valid under `revision`. */
  get(presented: string, revision: number, now: number): KeyIdentity | null {
    if (revision !== this.revision) {
      this.entries.clear();
      this.revision = revision;
      return null;
    }
    const entry = this.entries.get(presented);
    if (entry === undefined) return null;
    if (entry.expiresAt <= now) {
      this.entries.delete(presented);
      return null;
    }
    return entry.identity;
  }

  /** Remembers `identity` as the one behind `presented`, which the caller found valid under `revision`. */
  set(presented: string, identity: KeyIdentity, revision: number, now: number): void {
    if (revision !== this.revision) {
      this.entries.clear();
      this.revision = revision;
    }
    // Map iteration order is insertion order: the first key is the oldest entry.
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(presented, { identity, expiresAt: now + this.ttlMs });
  }

  clear(): void {
    this.entries.clear();
  }
}
