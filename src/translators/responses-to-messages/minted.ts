/**
 * The responses Tollgate minted for Claude models, kept for a short while so a client can refer back
 * to them as it would to OpenAI's stored ones: `previous_response_id` continues the conversation a
 * response ended, and `item_reference` names one of its output items. Bounded in age, in count and in
 * size, and scoped to the account that minted them: another account's id is as unknown as a made-up
 * one. This file is the in-process table; `minted-redis.ts` shares it between instances.
 *
 * Each response keeps only its own turn (the request's input, the reply's output) and the id of the
 * response it continued, so a conversation carried by previous_response_id costs its length once,
 * not once per turn.
 */
import type { Json } from '../../json';

/** How long a minted response can be referred to. */
export const MINTED_TTL_MS = 30 * 60 * 1000;
/** Longest chain of previous_response_id links followed; deeper conversations are refused as unknown. */
const MAX_CHAIN = 1000;

export interface MintedLimits {
  readonly responses: number;
  /** Approximate budget for all kept turns together, in characters of their JSON. */
  readonly chars: number;
  readonly items: number;
}

const DEFAULT_LIMITS: MintedLimits = { responses: 2000, chars: 64 * 1024 * 1024, items: 20000 };

/** One kept response: its turn, and the response that turn continued. */
export interface MintedTurn {
  readonly previous: string | null;
  readonly input: readonly Json[];
  readonly output: readonly Json[];
}

/** Where minted responses live; `scope` is the account that minted them. */
export interface MintedStore {
  remember(scope: string, id: string, turn: MintedTurn): Promise<void>;
  /** The whole conversation response `id` ended, or undefined when any link of it is not kept. */
  conversation(scope: string, id: string): Promise<Json[] | undefined>;
  item(scope: string, id: string): Promise<Json | undefined>;
}

interface Entry<T> {
  readonly value: T;
  readonly expiresAt: number;
  readonly size: number;
}

/** A map that forgets entries past their age, and its oldest entries beyond a count or a total size. */
class BoundedMap<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private total = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxSize: number = Number.POSITIVE_INFINITY,
  ) {}

  set(key: string, value: T, now: number, size = 0): void {
    this.delete(key);
    this.entries.set(key, { value, expiresAt: now + MINTED_TTL_MS, size });
    this.total += size;
    // Insertion order is age order, so the first key is always the oldest.
    while (this.entries.size > this.maxEntries || (this.total > this.maxSize && this.entries.size > 1)) {
      this.delete(this.entries.keys().next().value as string);
    }
  }

  get(key: string, now: number): T | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > now) return entry.value;
    this.delete(key);
    return undefined;
  }

  private delete(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.total -= entry.size;
    this.entries.delete(key);
  }
}

/** The characters a turn costs the table. */
export function turnSize(turn: MintedTurn): number {
  return JSON.stringify(turn.input).length + JSON.stringify(turn.output).length;
}

/** Follows previous_response_id links back from `id` with `read`; undefined when one is missing. */
export async function chainedConversation(id: string, read: (id: string) => Promise<MintedTurn | undefined>): Promise<Json[] | undefined> {
  const turns: MintedTurn[] = [];
  for (let next: string | null = id; next !== null; ) {
    if (turns.length === MAX_CHAIN) return undefined;
    const turn = await read(next);
    if (turn === undefined) return undefined;
    turns.push(turn);
    next = turn.previous;
  }
  return turns.reverse().flatMap((turn) => [...turn.input, ...turn.output]);
}

/** The table in this process. */
export class LocalMintedStore implements MintedStore {
  private readonly turns: BoundedMap<MintedTurn>;
  private readonly items: BoundedMap<Json>;

  constructor(
    private readonly clock: () => number = Date.now,
    limits: MintedLimits = DEFAULT_LIMITS,
  ) {
    this.turns = new BoundedMap(limits.responses, limits.chars);
    this.items = new BoundedMap(limits.items);
  }

  remember(scope: string, id: string, turn: MintedTurn): Promise<void> {
    const now = this.clock();
    this.turns.set(scoped(scope, id), turn, now, turnSize(turn));
    for (const item of turn.output) if (typeof item.id === 'string') this.items.set(scoped(scope, item.id), item, now);
    return Promise.resolve();
  }

  conversation(scope: string, id: string): Promise<Json[] | undefined> {
    const now = this.clock();
    return chainedConversation(id, (link) => Promise.resolve(this.turns.get(scoped(scope, link), now)));
  }

  item(scope: string, id: string): Promise<Json | undefined> {
    return Promise.resolve(this.items.get(scoped(scope, id), this.clock()));
  }
}

function scoped(scope: string, id: string): string {
  return `${scope}\n${id}`;
}
