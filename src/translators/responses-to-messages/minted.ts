/**
 * The responses Tollgate minted for Claude models, kept for a short while in this process so a client
 * can refer back to them as it would to OpenAI's stored ones: `previous_response_id` continues the
 * conversation a response ended, and `item_reference` names one of its items. Bounded in count and
 * age; a reference to anything older (or to another instance's response) is refused with a 400 that
 * says to send the conversation itself.
 */
import type { Json } from '../to-messages/fields';

/** How long a minted response can be referred to. */
export const MINTED_TTL_MS = 30 * 60 * 1000;
const MAX_RESPONSES = 2000;
const MAX_ITEMS = 20000;

interface Entry<T> {
  readonly value: T;
  readonly expiresAt: number;
}

/** A map that forgets its oldest entry beyond `limit` and any entry past its age. */
class BoundedMap<T> {
  private readonly entries = new Map<string, Entry<T>>();

  constructor(private readonly limit: number) {}

  set(key: string, value: T, now: number): void {
    this.entries.delete(key);
    this.entries.set(key, { value, expiresAt: now + MINTED_TTL_MS });
    // Insertion order is age order, so the first key is always the oldest.
    while (this.entries.size > this.limit) this.entries.delete(this.entries.keys().next().value as string);
  }

  get(key: string, now: number): T | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > now) return entry.value;
    this.entries.delete(key);
    return undefined;
  }
}

export class MintedResponses {
  private readonly conversations = new BoundedMap<readonly Json[]>(MAX_RESPONSES);
  private readonly items = new BoundedMap<Json>(MAX_ITEMS);

  constructor(private readonly clock: () => number = Date.now) {}

  /** Keeps response `id`: the whole conversation it ends (its input, then its output), and each item with an id. */
  remember(id: string, conversation: readonly Json[]): void {
    const now = this.clock();
    this.conversations.set(id, conversation, now);
    for (const item of conversation) if (typeof item.id === 'string') this.items.set(item.id, item, now);
  }

  conversation(id: string): readonly Json[] | undefined {
    return this.conversations.get(id, this.clock());
  }

  item(id: string): Json | undefined {
    return this.items.get(id, this.clock());
  }
}

/** The process's minted responses, shared by every request the Responses translator handles. */
export const mintedResponses = new MintedResponses();
