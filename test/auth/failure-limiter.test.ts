import { expect } from 'chai';
import { AuthFailureLimiter } from '../../src/auth/failure-limiter';

describe('auth/AuthFailureLimiter', () => {
  it('lets an address fail `limit` times per minute, then says how long to wait', () => {
    const limiter = new AuthFailureLimiter(3);
    const t0 = 1_000_000;
    for (let i = 0; i < 3; i++) {
      expect(limiter.retryAfter('10.0.0.1', t0)).to.equal(0);
      limiter.fail('10.0.0.1', t0);
    }
    expect(limiter.retryAfter('10.0.0.1', t0 + 1000)).to.equal(59);
    expect(limiter.retryAfter('10.0.0.2', t0 + 1000), 'another address').to.equal(0);
    expect(limiter.retryAfter('10.0.0.1', t0 + 60_000), 'the next minute').to.equal(0);
  });

  it('is off with a limit of 0', () => {
    const limiter = new AuthFailureLimiter(0);
    for (let i = 0; i < 100; i++) limiter.fail('10.0.0.1', 0);
    expect(limiter.retryAfter('10.0.0.1', 0)).to.equal(0);
  });
});
