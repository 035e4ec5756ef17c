/**
 * Validated keys kept in memory so the hot path skips the store. An entry lives at most `ttlMs`, and
 * the whole cache empties the moment the store's key revision moves, so a revocation made anywhere
 * (this process, the CLI, another instance) is honoured on the next request.
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

  /** The cached identity for a key hash, if still valid under `revision`. */
  get(hash: Buffer, revision: number, now: number): KeyIdentity | null {
    if (revision !== this.revision) {
      this.entries.clear();
      this.revision = revision;
      return null;
    }
    const id = hash.toString('base64');
    const entry = this.entries.get(id);
    if (entry === undefined) return null;
    if (entry.expiresAt <= now) {
      this.entries.delete(id);
      return null;
    }
    return entry.identity;
  }

  set(identity: KeyIdentity, revision: number, now: number): void {
    if (revision !== this.revision) {
      this.entries.clear();
      this.revision = revision;
    }
    // Map iteration order is insertion order: the first key is the oldest entry.
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(identity.hash.toString('base64'), { identity, expiresAt: now + this.ttlMs });
  }

  clear(): void {
    this.entries.clear();
  }
}
