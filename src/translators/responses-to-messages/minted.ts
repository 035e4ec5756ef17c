/**
 * The responses Tollgate minted for Claude models, kept for a short while in this process so a client
 * can refer back to them as it would to OpenAI's stored ones: `previous_response_id` continues the
 * conversation a response ended, and `item_reference` names one of its output items. Bounded in age,
 * in count and in size; a reference to anything older (or to another instance's response) is refused
 * with a 400 that says to send the conversation itself.
 *
 * Each response keeps only its own turn (the request's input, the reply's output) and the id of the
 * response it continued, so a conversation carried by previous_response_id costs its length once,
 * not once per turn.
 */
import type { Json } from '../../json';

/** How long a minted response can be referred to. */
export const MINTED_TTL_MS = 30 * 60 * 1000;

export interface MintedLimits {
  readonly responses: number;
  /** Approximate budget for all kept turns together, in characters of their JSON. */
  readonly chars: number;
  readonly items: number;
}

const DEFAULT_LIMITS: MintedLimits = { responses: 2000, chars: 64 * 1024 * 1024, items: 20000 };
/** Longest chain of previous_response_id links followed; deeper conversations are refused as unknown. */
const MAX_CHAIN = 1000;

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

/** One kept response: its turn, and the response that turn continued. */
interface MintedTurn {
  readonly previous: string | null;
  readonly input: readonly Json[];
  readonly output: readonly Json[];
}

export class MintedResponses {
  private readonly turns: BoundedMap<MintedTurn>;
  private readonly items: BoundedMap<Json>;

  constructor(
    private readonly clock: () => number = Date.now,
    limits: MintedLimits = DEFAULT_LIMITS,
  ) {
    this.turns = new BoundedMap(limits.responses, limits.chars);
    this.items = new BoundedMap(limits.items);
  }

  /** Keeps response `id`: the input it answered (after `previous`, if it continued one) and its output items. */
  remember(id: string, previous: string | null, input: readonly Json[], output: readonly Json[]): void {
    const now = this.clock();
    const size = JSON.stringify(input).length + JSON.stringify(output).length;
    this.turns.set(id, { previous, input, output }, now, size);
    for (const item of output) if (typeof item.id === 'string') this.items.set(item.id, item, now);
  }

  /** The whole conversation response `id` ended, or undefined when any link of it is no longer kept. */
  conversation(id: string): Json[] | undefined {
    const now = this.clock();
    const turns: MintedTurn[] = [];
    for (let next: string | null = id; next !== null; ) {
      const turn = this.turns.get(next, now);
      if (turn === undefined || turns.length === MAX_CHAIN) return undefined;
      turns.push(turn);
      next = turn.previous;
    }
    return turns.reverse().flatMap((turn) => [...turn.input, ...turn.output]);
  }

  item(id: string): Json | undefined {
    return this.items.get(id, this.clock());
  }
}

/** The process's minted responses, shared by every request the Responses translator handles. */
export const mintedResponses = new MintedResponses();
