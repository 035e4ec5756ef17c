/**
 * What a Redis restart or flush must not take with it. Redis holds, per instance, what the instance
 * settled that the ledger does not hold yet (`undrained:<instance>`), and a seed subtracts it from the
 * ledger's balance; lost, a seed would count those charges as unspent and serve them again. So each
 * instance keeps its own figures in memory too (`InstanceFigures`: the truth, changed in the same step
 * as each script that changes Redis's copy is sent) and puts them back whenever Redis comes back empty.
 *
 * Redis's state is an epoch: a hash (`epoch`: id, opens) made by whoever first finds it missing. A new
 * epoch after a loss opens `REASSERT_WINDOW_MS` later: until then no balance, key or budget is seeded
 * (seeds wait), which gives every live instance the time to notice the new epoch (each looks every
 * `EPOCH_CHECK_MS`, and at once on a reconnect or when a seed of its own meets it) and re-assert its
 * figures. Only the first epoch of a deployment opens at once: nothing can have been settled before it.
 * The window alone is a guess about timing (a loaded machine once took longer than it to look, and a
 * seed left the late instance's charges out), so an instance also remembers which others it last saw
 * alive in the state it stood in, and after a loss its seeds wait, past the window, until each of them
 * has re-asserted in the new epoch (`in:<instance>` in the epoch hash) or has been silent for the
 * heartbeat's lifetime (dead, by the rule every seed already applies).
 *
 * Redis may also come back with a copy rather than nothing: a replica promoted by a failover, or a
 * restart that loaded a snapshot, holds the state as it was some writes ago (replication and
 * snapshots lag), so its balances may not have taken the last settlements. The epoch names the server
 * it stands on; the epoch script, on another server, drops the live money and makes a new epoch, and
 * from there it is a loss like any other. And since the first command on a new connection could reach
 * such a copy before the periodic look does, the book looks at the epoch on every new connection
 * before it sends anything else (`RedisBook.script`).
 */
import { randomUUID } from 'node:crypto';
import type { BookScript } from './redis-scripts';

/** How often an instance looks whether Redis's epoch moved (a flush leaves its connection up). */
export const EPOCH_CHECK_MS = 1000;
/** How long a new epoch keeps seeds waiting: past every live instance's next look, with margin. */
const REASSERT_WINDOW_MS = 2500;
/** How often a seed past the window looks whether the instances it waits for have re-asserted. */
const PEER_POLL_MS = 50;

/** This instance's share of what Redis keeps for seeds, kept in memory as the truth to re-assert. */
export class InstanceFigures {
  /**
   * Settled here, not yet in the ledger, by undrained field: an account id, a key's 'k:<key id>', a
   * budget period's 'b:<scope>:<id>:<start ms>:<end ms>'.
   */
  private readonly undrained = new Map<string, bigint>();
  /** The store write under way per undrained field: '<request id> <amount>', as `w:<field>` in Redis. */
  private readonly writing = new Map<string, string>();

  addUndrained(field: string, amount: bigint): void {
    const next = (this.undrained.get(field) ?? 0n) + amount;
    if (next === 0n) this.undrained.delete(field);
    else this.undrained.set(field, next);
  }

  beginWrite(field: string, mark: string): void {
    this.writing.set(field, mark);
  }

  endWrite(field: string): void {
    this.writing.delete(field);
  }

  /** The REASSERT script's field and value pairs: the amounts, then the marks. */
  toArgs(): string[] {
    const args: string[] = [];
    for (const [field, amount] of this.undrained) args.push(field, String(amount));
    for (const [field, mark] of this.writing) args.push(`w:${field}`, mark);
    return args;
  }
}

export interface EpochKeys {
  readonly epoch: string;
  readonly holdExpiries: string;
  /** The key prefix: the epoch script finds the live money to drop by it. */
  readonly prefix: string;
  readonly undrained: string;
  readonly instances: string;
  readonly heartbeat: string;
}

/** Thrown by a seed script that met another epoch than the one it was given: look again. */
export const EPOCH_MOVED = 'epoch';

export class RedisEpoch {
  /** The epoch this instance's figures stand in, once it has seen one. */
  private current: string | null = null;
  private knownOpen = false;
  private looking: Promise<string> | null = null;

  constructor(
    private readonly script: (name: BookScript, keys: readonly string[], args: readonly string[]) => Promise<unknown>,
    private readonly keys: EpochKeys,
    private readonly instance: string,
    private readonly instanceTtlMs: number,
    private readonly figures: InstanceFigures,
    /** Told how many keys the epoch script dropped when it found Redis's state copied from another server. */
    private readonly onCopied: (dropped: number) => void = () => undefined,
  ) {}

  /**
   * The epoch seeds may run in: re-asserts this instance's figures first if it is new, waits while it
   * is not open. An epoch known open is answered without asking Redis: the seed script checks it in
   * the same step as it seeds, and one that moved is `moved()` and looked for again.
   */
  async open(): Promise<string> {
    if (this.current !== null && this.knownOpen) return this.current;
    for (;;) {
      const { id, opensInMs } = await this.look();
      if (opensInMs <= 0 && this.peersBack()) {
        this.knownOpen = id === this.current;
        return id;
      }
      await delay(opensInMs > 0 ? Math.min(opensInMs, EPOCH_CHECK_MS / 4) : PEER_POLL_MS);
    }
  }

  /**
   * Whether every other instance seen alive in the state before has re-asserted in this one (one
   * silent for the heartbeat's lifetime since is dead: seeds leave its figures out, as ever).
   */
  private peersBack(): boolean {
    return performance.now() - this.peers.at >= this.instanceTtlMs || this.peers.ids.every((peer) => this.back.has(peer));
  }

  /** A seed met another epoch than the one `open()` gave it. */
  moved(): void {
    this.knownOpen = false;
  }

  /** Looks at Redis's epoch (for the periodic check and reconnects); one look at a time. */
  look(): Promise<{ id: string; opensInMs: number }> {
    const looking = (this.looking ??= this.lookNow().finally(() => (this.looking = null)));
    return looking.then((id) => this.opening(id));
  }

  private lastOpens = 0;
  private lastNow = 0;
  private lastAt = 0;
  /** The other instances alive at the last look in an epoch this one stood in fully, and when (ours). */
  private peers: { readonly ids: readonly string[]; readonly at: number } = { ids: [], at: 0 };
  /** The instances the last look found re-asserted in its epoch. */
  private back = new Set<string>();
  /** The epoch whose every peer came back (or was one this instance stood in from the start). */
  private settled: string | null = null;

  private opening(id: string): { id: string; opensInMs: number } {
    // The server's clock, moved on by ours since it was read: instances' clocks need not agree.
    const now = this.lastNow + (performance.now() - this.lastAt);
    return { id, opensInMs: this.lastOpens - now };
  }

  private async lookNow(): Promise<string> {
    const fresh = this.current === null ? '1' : '0';
    const args = [randomUUID(), String(REASSERT_WINDOW_MS), fresh, this.keys.prefix];
    const reply = (await this.script('epoch', [this.keys.epoch, this.keys.holdExpiries], args)) as [string, string, string, string, string, string];
    const [id, opens, now, dropped, alive, back] = reply;
    if (dropped !== '') this.onCopied(Number(dropped));
    this.lastOpens = Number(opens);
    this.lastNow = Number(now);
    this.lastAt = performance.now();
    this.back = new Set(words(back));
    if (id !== this.current) {
      this.knownOpen = false;
      // The first epoch this instance sees: it had no state before to have peers in.
      if (this.current === null) this.settled = id;
      // Sent in one step from the figures as they are now: every script sent before it is applied
      // before it, and every one sent after it applies its own change on top.
      const keys = [this.keys.undrained, this.keys.instances, this.keys.heartbeat, this.keys.epoch];
      await this.script('reassert', keys, [this.instance, String(this.instanceTtlMs), id, ...this.figures.toArgs()]);
      this.current = id;
    }
    if (this.settled !== id && Number(opens) <= Number(now) && this.peersBack()) this.settled = id;
    // Only a settled epoch's heartbeats name the peers: in a new one, a peer not back yet is not listed.
    if (this.settled === id) this.peers = { ids: words(alive).filter((peer) => peer !== this.instance), at: this.lastAt };
    return id;
  }
}

function words(list: string): string[] {
  return list === '' ? [] : list.split(' ');
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
