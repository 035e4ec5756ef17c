/**
 * Minted responses shared by every instance through Redis, so a follow-up that a load balancer sends
 * to another instance still finds its conversation. Each turn is one key that expires with the table's
 * age; an item id points at the turn that holds it. Per account, only the newest responses are kept
 * (older ones are deleted as new ones arrive), and a turn too large for a shared key stays in this
 * instance's own table only. While Redis fails, the local table answers alone, so references weaken
 * to "this instance only" instead of failing every request.
 */
import { hashTag, type RedisClient } from '../../shared-state/redis';
import type { Logger } from 'pino';
import { isObject, tryParse, type Json } from '../../json';
import { chainedConversation, MINTED_TTL_MS, turnSize, type MintedStore, type MintedTurn } from './minted';

export interface RedisMintedLimits {
  /** Responses kept per account; the oldest beyond it are deleted. */
  readonly responsesPerAccount: number;
  /** The largest turn (characters of its JSON) written to Redis. */
  readonly turnChars: number;
}

const DEFAULT_LIMITS: RedisMintedLimits = { responsesPerAccount: 2000, turnChars: 4 * 1024 * 1024 };

export class RedisMintedStore implements MintedStore {
  private warned = false;

  constructor(
    private readonly redis: RedisClient,
    /** The gateway's key prefix plus this table's own, e.g. `tollgate:minted:`. */
    private readonly prefix: string,
    private readonly local: MintedStore,
    private readonly logger: Logger,
    private readonly limits: RedisMintedLimits = DEFAULT_LIMITS,
  ) {}

  async remember(scope: string, id: string, turn: MintedTurn): Promise<void> {
    await this.local.remember(scope, id, turn);
    if (turnSize(turn) > this.limits.turnChars) return;
    const index = this.key(scope, 'index', '');
    try {
      const write = this.redis.multi().set(this.key(scope, 'r', id), JSON.stringify(turn), 'PX', MINTED_TTL_MS);
      for (const item of turn.output) if (typeof item.id === 'string') write.set(this.key(scope, 'i', item.id), id, 'PX', MINTED_TTL_MS);
      write.lpush(index, id).pexpire(index, MINTED_TTL_MS).lrange(index, this.limits.responsesPerAccount, -1).ltrim(index, 0, this.limits.responsesPerAccount - 1);
      const results = await write.exec();
      const evicted = results?.at(-2)?.[1];
      if (Array.isArray(evicted) && evicted.length > 0) {
        await this.redis.del(...evicted.map((old) => this.key(scope, 'r', String(old))));
      }
    } catch (error) {
      this.degraded(error);
    }
  }

  async conversation(scope: string, id: string): Promise<Json[] | undefined> {
    try {
      const shared = await chainedConversation(id, (link) => this.turn(scope, link));
      if (shared !== undefined) return shared;
    } catch (error) {
      this.degraded(error);
    }
    return this.local.conversation(scope, id);
  }

  async item(scope: string, id: string): Promise<Json | undefined> {
    try {
      const owner = await this.redis.get(this.key(scope, 'i', id));
      const turn = owner === null ? undefined : await this.turn(scope, owner);
      const item = turn?.output.find((candidate) => candidate.id === id);
      if (item !== undefined) return item;
    } catch (error) {
      this.degraded(error);
    }
    return this.local.item(scope, id);
  }

  private async turn(scope: string, id: string): Promise<MintedTurn | undefined> {
    const stored = await this.redis.get(this.key(scope, 'r', id));
    if (stored === null) return undefined;
    const turn = tryParse(stored);
    if (!isObject(turn) || !Array.isArray(turn.input) || !Array.isArray(turn.output)) return undefined;
    return turn as unknown as MintedTurn;
  }

  /**
   * Scope and id are client-controlled; JSON quoting keeps one from reaching into another's keys. On a
   * Cluster the scope is the hash tag: one write touches its scope's keys only, all in one slot.
   */
  private key(scope: string, kind: 'r' | 'i' | 'index', id: string): string {
    return `${this.prefix}${hashTag(this.redis, JSON.stringify(scope))}:${kind}:${id}`;
  }

  private degraded(error: unknown): void {
    if (this.warned) return;
    this.warned = true;
    this.logger.warn({ err: error }, 'minted responses: Redis failed; this instance answers references from its own table until it answers again');
  }
}
