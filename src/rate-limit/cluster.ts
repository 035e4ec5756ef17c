/**
 * The back end of a worker under `server.workers` > 1 without Redis: the counters live in the
 * primary's one LocalLimiter, and every decision is one round trip over the cluster IPC channel, so
 * the workers together admit exactly what one process would. Should the primary not answer in time
 * (or the channel be gone while this worker winds down), the request is decided by this worker's own
 * counters at its share of the limits, as an instance does while Redis is down (fallback.ts).
 */
import type { Logger } from 'pino';
import type { PrimaryChannel } from '../cluster/primary-channel';
import type { Admission, Decision, LimitRequest, Limiter } from './limiter';
import { LocalLimiter } from './local';

/** Far above an IPC round trip (tens of microseconds) and far below a client's patience. */
const ANSWER_TIMEOUT_MS = 1000;

export class ClusterLimiter implements Limiter {
  private readonly fallback: LocalLimiter;
  /** Requests admitted by the fallback: their release stays here. */
  private readonly decidedHere = new Set<string>();
  private down = false;

  constructor(
    private readonly channel: Pick<PrimaryChannel, 'ask' | 'tell'>,
    workers: number,
    private readonly logger: Logger,
  ) {
    this.fallback = new LocalLimiter({ divisor: workers });
  }

  /** True while the primary does not answer and this worker decides alone. */
  get degraded(): boolean {
    return this.down;
  }

  async acquire(request: LimitRequest): Promise<Decision> {
    try {
      const answer = await this.channel.ask((id) => ({ tollgate: 'limit-acquire', id, request }), ANSWER_TIMEOUT_MS);
      if (answer.tollgate !== 'limit-decision') throw new Error(`unexpected answer "${answer.tollgate}"`);
      this.markUp();
      return answer.decision;
    } catch (error) {
      this.markDown(error);
      const decision = this.fallback.decide(request);
      if (decision.ok) this.decidedHere.add(request.requestId);
      return decision;
    }
  }

  release(admission: Admission, actualTokens: number | null): Promise<void> {
    if (this.decidedHere.delete(admission.requestId)) return this.fallback.release(admission, actualTokens);
    // Lost only with the channel, and then the primary frees every slot of this worker when it exits.
    this.channel.tell({ tollgate: 'limit-release', admission, actualTokens });
    return Promise.resolve();
  }

  close(): Promise<void> {
    return this.fallback.close();
  }

  private markDown(error: unknown): void {
    if (this.down) return;
    this.down = true;
    this.logger.warn({ err: error }, 'rate-limit: the primary process did not answer; this worker enforces its share of the limits until it does');
  }

  private markUp(): void {
    if (!this.down) return;
    this.down = false;
    this.logger.info('rate-limit: the primary answers again; limits are shared across workers again');
  }
}
