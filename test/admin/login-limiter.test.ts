import { expect } from 'chai';
import { LoginLimiter } from '../../src/admin/login-limiter';

describe('admin/login-limiter', () => {
  const WINDOW_MS = 15 * 60_000;
  const start = 1_000_000;

  it('refuses a name after the limit of wrong passwords, for the rest of its 15-minute window', () => {
    const limiter = new LoginLimiter(3);
    const subjects = ['login:alice', 'address:10.0.0.1'];
    for (let i = 0; i < 2; i += 1) limiter.fail(subjects, start);
    expect(limiter.retryAfter(subjects, start)).to.equal(0);
    limiter.fail(subjects, start);
    expect(limiter.retryAfter(subjects, start + 60_000)).to.equal((WINDOW_MS - 60_000) / 1000);
    // The same name from another address is refused too, and the address for another name.
    expect(limiter.retryAfter(['login:alice', 'address:10.0.0.2'], start)).to.be.greaterThan(0);
    expect(limiter.retryAfter(['login:bob', 'address:10.0.0.1'], start)).to.be.greaterThan(0);
    expect(limiter.retryAfter(['login:bob', 'address:10.0.0.2'], start)).to.equal(0);
    expect(limiter.retryAfter(subjects, start + WINDOW_MS)).to.equal(0);
  });

  it('clears nothing on success, and counts successes in their own window, three times the limit', () => {
    const limiter = new LoginLimiter(2);
    limiter.fail(['account:acc_1', 'address:10.0.0.1'], start);
    limiter.fail(['account:acc_1', 'address:10.0.0.1'], start);
    limiter.succeed(['account:acc_1', 'address:10.0.0.1'], start);
    // A correct password (perhaps typed on another account that shares the name in another case)
    // does not reopen the account to guesses.
    expect(limiter.retryAfter(['account:acc_1', 'address:10.0.0.2'], start)).to.be.greaterThan(0);
    for (let i = 0; i < 5; i += 1) limiter.succeed(['account:acc_2', 'address:10.0.0.3'], start);
    expect(limiter.retryAfter(['account:acc_2'], start)).to.equal(0);
    limiter.succeed(['account:acc_2', 'address:10.0.0.3'], start);
    expect(limiter.retryAfter(['account:acc_2'], start)).to.be.greaterThan(0);
    expect(limiter.retryAfter(['address:10.0.0.3'], start)).to.be.greaterThan(0);
    expect(limiter.retryAfter(['account:acc_2'], start + WINDOW_MS)).to.equal(0);
  });

  it('limits nothing at 0', () => {
    const limiter = new LoginLimiter(0);
    for (let i = 0; i < 100; i += 1) limiter.fail(['login:alice'], start);
    expect(limiter.retryAfter(['login:alice'], start)).to.equal(0);
  });
});
