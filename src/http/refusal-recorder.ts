/**
 * Records refused requests (`store/refusals.ts`) off the request path: `record` only queues, and the
 * queue is written every `intervalMs` in one transaction, like the ledger's charges but apart from
 * them (a flood of refusals never counts against the ledger's backlog bound, and is not written to
 * the outbox: a refusal moves no money).
 *
 * Bounded by a cap per source and window: a source (a key, or for a request of no account the
 * client's address) has its first `perWindow` refusals of each window recorded one by one; past that,
 * its refusals of one status and code are folded into a single row that counts them. So a flood of
 * 401s from one address adds at most `perWindow` rows and one folded row per code each window,
 * however fast it comes. Sources are counted up to `maxSources` per window; refusals of sources past
 * that fold into rows of no source. A store that is away keeps the queue, up to `maxQueued` rows
 * (then one-by-one rows fold too), and is retried at the next interval.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { modelNameOf, sessionIdOf } from '../billing/client-trail';
import type { GatewayState } from '../kernel/context';
import type { GatewayError } from '../kernel/errors';
import type { RefusalRecord, RefusalStore } from '../store/refusals';

export interface RefusalLimits {
  readonly intervalMs: number;
  readonly windowMs: number;
  readonly perWindow: number;
  readonly maxSources: number;
  readonly maxQueued: number;
}

/** A minute's window, twenty rows per source in it, written twice a second. */
const REFUSAL_LIMITS: RefusalLimits = { intervalMs: 500, windowMs: 60_000, perWindow: 20, maxSources: 10_000, maxQueued: 50_000 };

/** What the boundary knows of a refused request. */
export type Refusal = Omit<RefusalRecord, 'id' | 'count'> & { readonly requestId: string };

/**
 * The record of a request answered with `error`, or null when its charge records it already (billing
 * held for it, so the ledger has its row, status and all).
 */
export function refusalOf(state: GatewayState, error: GatewayError, address: string, header: (field: string) => string): Refusal | null {
  if (state.billing !== undefined) return null;
  const auth = state.auth;
  return {
    requestId: state.requestId,
    createdAt: new Date(),
    accountId: auth?.account.id ?? null,
    keyId: auth?.key.id ?? null,
    memberAccountId: auth?.key.memberAccountId ?? null,
    address: auth === undefined ? address : null,
    model: state.request?.model.id ?? modelNameOf(state.askedModel),
    endpoint: state.endpoint.id,
    status: error.status,
    code: error.code,
    level: error.refusedBy,
    sessionId: sessionIdOf(header),
  };
}

export class RefusalRecorder {
  private queue: RefusalRecord[] = [];
  /** Folded rows of this window not yet written, by source, status and code: their counts since the last write. */
  private folded = new Map<string, RefusalRecord>();
  /** Refusals recorded one by one this window, per source. */
  private seen = new Map<string, number>();
  private window = -1;
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> | null = null;
  private closed = false;
  /** Folded rows of different instances never share an id, so each adds to its own row. */
  private readonly instance = randomBytes(4).toString('hex');

  constructor(
    private readonly store: RefusalStore,
    private readonly logger: Logger,
    private readonly limits: RefusalLimits = REFUSAL_LIMITS,
  ) {}

  /** Rows waiting to be written. */
  get pending(): number {
    return this.queue.length + this.folded.size;
  }

  record(refusal: Refusal): void {
    if (this.closed) return;
    const now = refusal.createdAt.getTime();
    const window = Math.floor(now / this.limits.windowMs);
    if (window !== this.window) {
      this.window = window;
      this.seen.clear();
    }
    const source = refusal.accountId === null ? `ip:${refusal.address ?? ''}` : `key:${refusal.keyId ?? refusal.accountId}`;
    const seen = this.seen.get(source);
    if (seen === undefined && this.seen.size >= this.limits.maxSources) {
      this.fold('overflow', window, { ...refusal, accountId: null, keyId: null, memberAccountId: null, address: null, sessionId: null });
    } else if ((seen ?? 0) < this.limits.perWindow && this.queue.length < this.limits.maxQueued) {
      this.seen.set(source, (seen ?? 0) + 1);
      const { requestId, ...rest } = refusal;
      this.queue.push({ ...rest, id: requestId, count: 1 });
    } else {
      this.fold(source, window, refusal);
    }
    this.schedule();
  }

  private fold(source: string, window: number, refusal: Refusal): void {
    const name = `${source}|${refusal.status}|${refusal.code}`;
    const existing = this.folded.get(name);
    if (existing !== undefined) {
      this.folded.set(name, { ...existing, count: existing.count + 1, createdAt: refusal.createdAt, model: refusal.model });
      return;
    }
    const { requestId: _requestId, ...rest } = refusal;
    const id = `rfx_${this.instance}_${window}_${hashOf(name)}`;
    this.folded.set(name, { ...rest, id, count: 1 });
  }

  private schedule(): void {
    if (this.timer !== null || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, this.limits.intervalMs);
    this.timer.unref();
  }

  /** Writes what is queued; a failure keeps it for the next try. Never throws. */
  async flush(): Promise<void> {
    if (this.writing !== null) return this.writing;
    if (this.pending === 0) return;
    const batch = [...this.queue, ...this.folded.values()];
    this.queue = [];
    this.folded = new Map();
    this.writing = this.store
      .record(batch)
      .catch((error: unknown) => {
        this.logger.warn({ err: error, rows: batch.length }, 'refusals: writing refused requests failed; retrying');
        this.requeue(batch);
      })
      .finally(() => {
        this.writing = null;
        if (this.pending > 0) this.schedule();
      });
    return this.writing;
  }

  /** Puts a failed batch back ahead of what came since; folded rows merge with their later counts. */
  private requeue(batch: readonly RefusalRecord[]): void {
    const single = batch.filter((row) => !row.id.startsWith('rfx_'));
    this.queue = single.concat(this.queue).slice(0, this.limits.maxQueued);
    for (const row of batch) {
      if (!row.id.startsWith('rfx_')) continue;
      const name = `requeued|${row.id}`;
      const later = [...this.folded.entries()].find(([, candidate]) => candidate.id === row.id);
      if (later === undefined) this.folded.set(name, row);
      else this.folded.set(later[0], { ...later[1], count: later[1].count + row.count });
    }
  }

  /** Writes everything left (a few tries), then records nothing more. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    for (let attempt = 0; attempt < 3 && (this.pending > 0 || this.writing !== null); attempt += 1) {
      await this.writing;
      await this.flush();
    }
    if (this.pending > 0) this.logger.warn({ rows: this.pending }, 'refusals: refused requests not written at shutdown');
  }
}

/** A short, stable name for a folded row's source and reason. */
function hashOf(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 20);
}
