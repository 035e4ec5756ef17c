/**
 * Where the Redis book's keys go. A Lua script (and a MULTI) may touch one Cluster slot only, and a
 * request's hold and settlement must check and change its account's balance, key spend, budgets and
 * sessions, and this instance's undrained figures, in one atomic step. So the book is cut into
 * groups: every key one account's work touches (and every per-instance, per-epoch and sweep key those
 * scripts read) belongs to the account's group, and on a Cluster a group is one hash tag, one slot.
 *
 * - A single server or Sentinel: one group whose prefix is the configured one, so the key names are
 *   the ones the book always had (an upgrade changes nothing in Redis).
 * - A Cluster: `GROUPS` groups, each `<prefix>{bk<n>}:`, with `n` chosen so that their slots are
 *   evenly spaced over 0–16383: the contiguous slot ranges `redis-cli --cluster create` gives each
 *   primary then hold an equal share of them. An account's group is the CRC16 of its id mod `GROUPS`,
 *   the same on every instance.
 *
 * What is per account sits in its group once; what is per instance (the undrained hash, the heartbeat,
 * the outbox registration), per state (the epoch, the instance list) or per sweep (the hold expiries)
 * is kept in every group, so each group's scripts find all of it in their slot. Cross-account work
 * (the sweep, the epoch looks, verify, heal, a stopped instance's outbox) visits every group.
 */
import type { BudgetScope } from '../store/store';

/** A Cluster's book groups: several per primary for 3–30 primaries; each costs every instance one epoch look a second. */
export const CLUSTER_GROUPS = 64;
const SLOTS = 16384;

/**
 * One slot's worth of the book, and the names of its keys (the layout is `redis-scripts.ts`'s header).
 * Every key a script is given is built by one group, so a script's keys share its slot.
 */
export class BookGroup {
  constructor(
    /** 0 … groups − 1. */
    readonly index: number,
    /** Every key of the group starts with it: the configured prefix, and on a Cluster the group's hash tag. */
    readonly prefix: string,
  ) {}

  account(accountId: string): string {
    return `${this.prefix}account:${accountId}`;
  }

  key(keyId: string): string {
    return `${this.prefix}key:${keyId}`;
  }

  /** A member's hash in an organisation account: what its requests under way hold, for member budgets. */
  member(budgetId: string): string {
    return `${this.prefix}member:${budgetId}`;
  }

  hold(requestId: string): string {
    return `${this.prefix}hold:${requestId}`;
  }

  settled(requestId: string): string {
    return `${this.prefix}settled:${requestId}`;
  }

  holdExpiries(): string {
    return `${this.prefix}hold-expiries`;
  }

  budget(scope: BudgetScope, id: string, start: Date, end: Date): string {
    return `${this.prefix}budget:${scope}:${id}:${start.getTime()}:${end.getTime()}`;
  }

  /** A budget period's field in the undrained hashes: 'b:<scope>:<id>:<start ms>:<end ms>'. */
  budgetField(budgetKey: string): string {
    return `b:${budgetKey.slice(`${this.prefix}budget:`.length)}`;
  }

  /** The budget hash of an undrained field 'b:…'. */
  budgetOf(field: string): string {
    return `${this.prefix}budget:${field.slice(2)}`;
  }

  session(scope: BudgetScope, id: string, sessionId: string): string {
    return `${this.prefix}session:${scope}:${id}:${sessionId}`;
  }

  creditFence(accountId: string): string {
    return `${this.prefix}credit-fence:${accountId}`;
  }

  creditDone(token: string): string {
    return `${this.prefix}credit-done:${token}`;
  }

  spendFence(scope: BudgetScope, id: string): string {
    return `${this.prefix}spend-fence:${scope}:${id}`;
  }

  undrained(instance: string): string {
    return `${this.prefix}undrained:${instance}`;
  }

  heartbeat(instance: string): string {
    return `${this.prefix}instance:${instance}`;
  }

  outbox(instance: string): string {
    return `${this.prefix}outbox:${instance}`;
  }

  instances(): string {
    return `${this.prefix}instances`;
  }

  epoch(): string {
    return `${this.prefix}epoch`;
  }
}

export interface BookLayout {
  readonly groups: readonly BookGroup[];
  /** The group every key of this account's work lives in. */
  groupOf(accountId: string): BookGroup;
  /** A SCAN pattern for the keys of `kind` (`account:`, `budget:` …) in every group. */
  pattern(kind: string): string;
  /** The group of a key name a scan found and the name after the group's prefix; null for a key that is not the book's. */
  parse(name: string): { readonly group: BookGroup; readonly rest: string } | null;
}

/** The book's layout: one group on a single server (names unchanged), `CLUSTER_GROUPS` tagged ones on a Cluster. */
export function bookLayout(keyPrefix: string, cluster: boolean): BookLayout {
  if (!cluster) {
    const only = new BookGroup(0, keyPrefix);
    return {
      groups: [only],
      groupOf: () => only,
      pattern: (kind) => `${keyPrefix}${kind}*`,
      parse: (name) => (name.startsWith(keyPrefix) ? { group: only, rest: name.slice(keyPrefix.length) } : null),
    };
  }
  const tags = spacedTags(CLUSTER_GROUPS);
  const groups = tags.map((tag, index) => new BookGroup(index, `${keyPrefix}{${tag}}:`));
  const byTag = new Map(tags.map((tag, index) => [tag, groups[index]]));
  return {
    groups,
    groupOf: (accountId) => groups[crc16(accountId) % groups.length],
    pattern: (kind) => `${keyPrefix}{bk*}:${kind}*`,
    parse: (name) => {
      if (!name.startsWith(`${keyPrefix}{`)) return null;
      const close = name.indexOf('}:', keyPrefix.length);
      const group = close < 0 ? undefined : byTag.get(name.slice(keyPrefix.length + 1, close));
      return group === undefined ? null : { group, rest: name.slice(close + 2) };
    },
  };
}

/** `count` tags `bk<n>`, the i-th the first whose slot falls in the i-th of `count` equal slot ranges. */
function spacedTags(count: number): string[] {
  const tags = Array.from({ length: count }, (): string | undefined => undefined);
  let left = count;
  for (let n = 0; left > 0; n++) {
    const tag = `bk${n}`;
    const range = Math.floor(((crc16(tag) % SLOTS) * count) / SLOTS);
    if (tags[range] === undefined) {
      tags[range] = tag;
      left -= 1;
    }
  }
  return tags as string[];
}

/** The CRC16 (XMODEM) Redis Cluster hashes a key's tag with (its slot is this mod 16384). */
export function crc16(text: string): number {
  let crc = 0;
  for (const byte of Buffer.from(text, 'utf8')) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}
