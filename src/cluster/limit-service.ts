/**
 * The primary's side of the shared rate limits: one LocalLimiter decides for every worker, so N
 * workers admit what one process would. The primary remembers which worker holds which admission,
 * so the concurrency slots of a worker that dies are given back rather than held forever.
 */
import { LocalLimiter } from '../rate-limit/local';
import type { Admission, Decision, LimitRequest } from '../rate-limit/limiter';

export class LimitService {
  private readonly limiter = new LocalLimiter();
  /** By worker id, then request id. */
  private readonly admitted = new Map<number, Map<string, Admission>>();

  acquire(workerId: number, request: LimitRequest): Decision {
    const decision = this.limiter.decide(request);
    if (decision.ok) {
      let own = this.admitted.get(workerId);
      if (own === undefined) this.admitted.set(workerId, (own = new Map<string, Admission>()));
      own.set(request.requestId, decision.admission);
    }
    return decision;
  }

  release(workerId: number, admission: Admission, actualTokens: number | null): void {
    const own = this.admitted.get(workerId);
    // Released once: a release the primary does not know (already freed when its worker died) is ignored.
    const held = own?.get(admission.requestId);
    if (held === undefined) return;
    own!.delete(admission.requestId);
    this.limiter.releaseNow(held, actualTokens);
  }

  /** Frees every slot the worker still held; the tokens it reserved stay counted in their windows. */
  workerGone(workerId: number): number {
    const own = this.admitted.get(workerId);
    this.admitted.delete(workerId);
    for (const admission of own?.values() ?? []) this.limiter.releaseNow(admission, null);
    return own?.size ?? 0;
  }
}
