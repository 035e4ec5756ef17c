import { expect } from 'chai';
import { KeyCache } from '../../src/auth/key-cache';
import type { KeyIdentity } from '../../src/store/store';

function identity(byte: number): KeyIdentity {
  const now = new Date(0);
  return {
    hash: Buffer.alloc(32, byte),
    key: { id: `key_${byte}`, accountId: 'acc_1', name: null, prefix: 'sk-abcd', last4: 'wxyz', createdAt: now, revokedAt: null, expiresAt: null, spendLimit: null, spent: 0n, models: null, rateLimits: null, budget: null, sessionBudget: null, allowedNetworks: null, operatorLimits: null },
    account: { id: 'acc_1', name: 'a', email: null, role: 'user', disabled: false, createdAt: now, budget: null, sessionBudget: null },
  };
}

/** A well-formed key per number: what a client presents. */
function presented(n: number): string {
  return `sk-${String(n).repeat(40)}`;
}

describe('auth/KeyCache', () => {
  it('returns a cached identity while the revision and the TTL hold', () => {
    const cache = new KeyCache(1000, 10);
    cache.set(presented(1), identity(1), 7, 0);
    expect(cache.get(presented(1), 7, 999)?.key.id).to.equal('key_1');
  });

  it('forgets an entry once its TTL has passed', () => {
    const cache = new KeyCache(1000, 10);
    cache.set(presented(1), identity(1), 7, 0);
    expect(cache.get(presented(1), 7, 1000)).to.equal(null);
  });

  it('empties itself when the store revision moves, so a revocation anywhere takes effect at once', () => {
    const cache = new KeyCache(60_000, 10);
    cache.set(presented(1), identity(1), 7, 0);
    cache.set(presented(2), identity(2), 7, 0);
    expect(cache.get(presented(1), 8, 1)).to.equal(null);
    expect(cache.get(presented(2), 8, 1)).to.equal(null);
  });

  it('still knows, for a store that cannot be asked, what it last said about a key: past its revision and TTL, until forgotten', () => {
    const cache = new KeyCache(1000, 10);
    cache.set(presented(1), identity(1), 7, 0);
    expect(cache.get(presented(1), 8, 5000)).to.equal(null);
    expect(cache.lastKnown(presented(1))?.key.id).to.equal('key_1');
    expect(cache.lastKnown(presented(2))).to.equal(null);
    cache.forget(presented(1));
    expect(cache.lastKnown(presented(1))).to.equal(null);
  });

  it('evicts the oldest entry when full', () => {
    const cache = new KeyCache(60_000, 2);
    cache.set(presented(1), identity(1), 7, 0);
    cache.set(presented(2), identity(2), 7, 0);
    cache.set(presented(3), identity(3), 7, 0);
    expect(cache.get(presented(1), 7, 1)).to.equal(null);
    expect(cache.get(presented(2), 7, 1)?.key.id).to.equal('key_2');
    expect(cache.get(presented(3), 7, 1)?.key.id).to.equal('key_3');
  });

  it('does not find an identity under another presented key', () => {
    const cache = new KeyCache(60_000, 10);
    cache.set(presented(1), identity(1), 7, 0);
    expect(cache.get(presented(2), 7, 1)).to.equal(null);
  });
});
