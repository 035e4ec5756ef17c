import { expect } from 'chai';
import { RetryBudget } from '../../src/upstream/retry-budget';

describe('upstream/RetryBudget', () => {
  it('allows retries up to a share of the requests under way, with a floor', async () => {
    const budget = new RetryBudget(20, 1);
    let allowed = 0;
    const release: Array<() => void> = [];
    const requests = Array.from({ length: 20 }, () =>
      budget.around(
        () =>
          new Promise<void>((resolve) => {
            if (budget.tryRetry()) allowed += 1;
            release.push(resolve);
          }),
      ),
    );
    // 20 requests under way: 20% of them may be retrying at once.
    expect(allowed).to.equal(4);
    release.forEach((done) => done());
    await Promise.all(requests);
    for (let i = 0; i < allowed; i++) budget.release();
    expect(budget.tryRetry(), 'the floor still lets one retry through when nothing runs').to.equal(true);
    expect(budget.tryRetry()).to.equal(false);
    budget.release();
    expect(budget.tryRetry()).to.equal(true);
  });
});
