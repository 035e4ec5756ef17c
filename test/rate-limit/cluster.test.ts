import { expect } from 'chai';
import pino from 'pino';
import type { PrimaryMessage, WorkerMessage } from '../../src/cluster/messages';
import { ClusterLimiter } from '../../src/rate-limit/cluster';
import type { Decision, LimitRequest } from '../../src/rate-limit/limiter';

const silent = pino({ level: 'silent' });

function request(id: string): LimitRequest {
  return { requestId: id, subjects: [{ id: 'key:k1', limits: { rpm: 4, tpm: 0, concurrency: 0 } }], tokens: 0 };
}

/** A channel to a primary that answers from `answer`, or fails every question when it is null. */
function channel(answer: ((request: LimitRequest) => Decision) | null) {
  const told: WorkerMessage[] = [];
  return {
    told,
    ask(question: (id: number) => Extract<WorkerMessage, { id: number }>): Promise<PrimaryMessage> {
      const asked = question(7);
      if (answer === null || asked.tollgate !== 'limit-acquire') return Promise.reject(new Error('the primary process is gone'));
      return Promise.resolve({ tollgate: 'limit-decision', id: asked.id, decision: answer(asked.request) });
    },
    tell(message: Exclude<WorkerMessage, { id: number }>): boolean {
      told.push(message);
      return true;
    },
  };
}

describe('rate-limit: a worker\'s limiter (ClusterLimiter)', () => {
  it('takes the primary\'s decision and hands the release back to it', async () => {
    const primary = channel(({ requestId, subjects, tokens }) => ({
      ok: true,
      admission: { requestId, subjects, windows: [1], tokens, backend: 'local' },
      usage: [],
    }));
    const limiter = new ClusterLimiter(primary, 2, silent);
    const decision = await limiter.acquire(request('a'));
    expect(decision.ok).to.equal(true);
    await limiter.release((decision as Extract<Decision, { ok: true }>).admission, 3);
    expect(primary.told).to.deep.equal([{ tollgate: 'limit-release', admission: (decision as Extract<Decision, { ok: true }>).admission, actualTokens: 3 }]);
  });

  it('without an answer, decides alone at its share of the limit and keeps those releases', async () => {
    const primary = channel(null);
    const limiter = new ClusterLimiter(primary, 2, silent);
    // rpm 4 over 2 workers: this worker alone admits 2.
    const decisions = [await limiter.acquire(request('a')), await limiter.acquire(request('b')), await limiter.acquire(request('c'))];
    expect(decisions.map((decision) => decision.ok)).to.deep.equal([true, true, false]);
    await limiter.release((decisions[0] as Extract<Decision, { ok: true }>).admission, null);
    expect(primary.told).to.deep.equal([]);
  });
});
