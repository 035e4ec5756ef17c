/**
 * Session affinity: requests of one conversation go to the route that last answered it, within its
 * priority level, so the provider's prompt cache keeps hitting (a cache is per provider, region and
 * model; spreading one conversation over equal routes sends most of its requests to a cold cache).
 * The table says where a session last succeeded; failover is untouched: when that route fails, the
 * request moves on as usual, and the route that answers becomes the session's new home.
 *
 * The table is bounded (least recently used entries go first) and entries expire. With Redis it is
 * shared by every instance; when Redis fails, the local table answers, so affinity weakens but no
 * request waits on it. Sessions are stored as digests, never as the raw header or key.
 */
import { createHash } from 'node:crypto';
import type { RedisClient } from '../shared-state/redis';
import type { Logger } from 'pino';
import type { AffinityConfig } from '../config/types';
import type { Target } from './resolve';

/** The route id a session is pinned to: provider and upstream model, unique within a model. */
export function routeId(target: Target): string {
  return `${target.provider.id}/${target.route.upstream_model}`;
}

/** Where sessions live: in process, or in Redis. */
export interface AffinityStore {
  get(key: string): Promise<string | null>;
  set(key: string, route: string): Promise<void>;
}

/** A bounded LRU table with expiry, in process. */
export class LocalAffinityStore implements AffinityStore {
  private readonly entries = new Map<string, { route: string; expiresAt: number }>();

  constructor(
    private readonly maxEntries: number,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): Promise<string | null> {
    const entry = this.entries.get(key);
    if (entry === undefined) return Promise.resolve(null);
    if (entry.expiresAt <= this.now()) {
      this.entries.delete(key);
      return Promise.resolve(null);
    }
    // Re-inserted so the Map's order stays least recently used first.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return Promise.resolve(entry.route);
  }

  set(key: string, route: string): Promise<void> {
    this.entries.delete(key);
    this.entries.set(key, { route, expiresAt: this.now() + this.ttlMs });
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    return Promise.resolve();
  }
}

/** The table in Redis (shared by instances), falling back to a local one while Redis fails. */
export class RedisAffinityStore implements AffinityStore {
  private warned = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly ttlMs: number,
    private readonly local: AffinityStore,
    private readonly logger: Logger,
  ) {}

  async get(key: string): Promise<string | null> {
    try {
      return await this.redis.get(this.prefix + key);
    } catch (error) {
      this.degraded(error);
      return this.local.get(key);
    }
  }

  async set(key: string, route: string): Promise<void> {
    await this.local.set(key, route);
    try {
      await this.redis.set(this.prefix + key, route, 'PX', this.ttlMs);
    } catch (error) {
      this.degraded(error);
    }
  }

  private degraded(error: unknown): void {
    if (this.warned) return;
    this.warned = true;
    this.logger.warn({ err: error }, 'session affinity: Redis failed; this instance keeps its own table until it answers again');
  }
}

/** What a request's session is, for the operator's choice of key; null: no affinity for this request. */
export function sessionOf(config: AffinityConfig, header: (name: string) => string, apiKeyId: string | null): string | null {
  const raw = config.key === 'api_key' ? apiKeyId : header(config.header);
  if (raw === null || raw === '') return null;
  return createHash('sha256').update(raw).digest('base64url').slice(0, 22);
}

/** The table key of a session's route for one model. */
export function affinityKey(modelId: string, session: string): string {
  return `${modelId}|${session}`;
}

/** The attempt order with the session's route first within its priority level; others keep their order. */
export function withAffinity(order: readonly Target[], pinned: string | null): Target[] {
  if (pinned === null) return [...order];
  const index = order.findIndex((target) => routeId(target) === pinned);
  if (index <= 0) return [...order];
  const target = order[index];
  const levelStart = order.findIndex((other) => other.route.priority === target.route.priority);
  return [...order.slice(0, levelStart), target, ...order.slice(levelStart, index), ...order.slice(index + 1)];
}
