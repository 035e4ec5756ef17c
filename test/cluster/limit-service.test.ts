import { expect } from 'chai';
import { LimitService } from '../../src/cluster/limit-service';
import type { Decision, LimitRequest } from '../../src/rate-limit/limiter';

function request(id: string, limits = { rpm: 0, tpm: 0, concurrency: 2 }): LimitRequest {
  return { requestId: id, subjects: [{ id: 'key:k1', limits }], tokens: 10 };
}

function admitted(decision: Decision): Extract<Decision, { ok: true }> {
  expect(decision.ok).to.equal(true);
  return decision as Extract<Decision, { ok: true }>;
}

describe('cluster: the primary\'s shared rate limits (LimitService)', () => {
  it('counts the requests of every worker against one limit', () => {
    const service = new LimitService();
    const limits = { rpm: 3, tpm: 0, concurrency: 0 };
    expect(service.acquire(1, request('a', limits)).ok).to.equal(true);
    expect(service.acquire(2, request('b', limits)).ok).to.equal(true);
    expect(service.acquire(1, request('c', limits)).ok).to.equal(true);
    const refused = service.acquire(2, request('d', limits));
    expect(refused.ok).to.equal(false);
    expect(refused.ok === false && refused.refused).to.equal('requests');
  });

  it('frees a concurrency slot once, on release', () => {
    const service = new LimitService();
    const first = admitted(service.acquire(1, request('a')));
    admitted(service.acquire(2, request('b')));
    expect(service.acquire(1, request('c')).ok).to.equal(false);
    service.release(1, first.admission, 5);
    // A second release of the same admission (or one from another worker) frees nothing more.
    service.release(1, first.admission, 5);
    service.release(2, first.admission, 5);
    admitted(service.acquire(1, request('d')));
    expect(service.acquire(2, request('e')).ok).to.equal(false);
  });

  it('frees every slot of a worker that dies, and only its own', () => {
    const service = new LimitService();
    admitted(service.acquire(1, request('a')));
    const other = admitted(service.acquire(2, request('b')));
    expect(service.acquire(2, request('c')).ok).to.equal(false);

    expect(service.workerGone(1)).to.equal(1);

    admitted(service.acquire(2, request('d')));
    expect(service.acquire(2, request('e')).ok).to.equal(false);
    service.release(2, other.admission, null);
    admitted(service.acquire(3, request('f')));
  });
});
