/** The session table (bounded, expiring, shared through Redis) and the order it gives a request. */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import pino from 'pino';
import type { ProviderConfig, RouteTarget } from '../../src/config/types';
import { LocalAffinityStore, RedisAffinityStore, routeId, sessionOf, withAffinity } from '../../src/routing/affinity';
import type { Target } from '../../src/routing/resolve';
import { REDIS_URL, redisProblem, redisTestPrefix } from '../helpers/services';

function target(provider: string, priority: number): Target {
  const route: RouteTarget = { provider, upstream_model: 'm', priority, weight: 1 };
  return { route, provider: { id: provider } as ProviderConfig };
}

const CONFIG = { enabled: true, key: 'header', header: 'x-claude-code-session-id', max_entries: 10, ttl_ms: 60_000 } as const;

describe('routing/affinity', () => {
  describe('withAffinity', () => {
    const order = [target('a', 0), target('b', 0), target('c', 0), target('d', 1), target('e', 1)];
    const ids = (targets: Target[]) => targets.map((t) => t.provider.id);

    it('puts the session\'s route first within its priority level, the rest in their order', () => {
      expect(ids(withAffinity(order, 'c/m'))).to.deep.equal(['c', 'a', 'b', 'd', 'e']);
      expect(ids(withAffinity(order, 'e/m'))).to.deep.equal(['a', 'b', 'c', 'e', 'd']);
    });

    it('leaves the order alone for no session, an unknown route, or a route already first', () => {
      for (const pinned of [null, 'gone/m', 'a/m']) expect(ids(withAffinity(order, pinned))).to.deep.equal(['a', 'b', 'c', 'd', 'e']);
    });
  });

  describe('withAffinity, case by case', () => {
    const ids = (targets: Target[]) => targets.map((t) => t.provider.id);
    const cases: ReadonlyArray<{ name: string; order: Target[]; pinned: string | null; expected: string[] }> = [
      { name: 'a pinned route of the first level leads', order: [target('a', 0), target('b', 0)], pinned: 'b/m', expected: ['b', 'a'] },
      { name: 'a pinned route never jumps its level: a lower priority stays behind', order: [target('a', 0), target('b', 1), target('c', 1)], pinned: 'c/m', expected: ['a', 'c', 'b'] },
      { name: 'the only route of its level keeps its place', order: [target('a', 0), target('b', 1)], pinned: 'b/m', expected: ['a', 'b'] },
      { name: 'a pinned route no longer offered (no credentials, removed) changes nothing', order: [target('a', 0), target('b', 0)], pinned: 'z/m', expected: ['a', 'b'] },
    ];
    for (const { name, order, pinned, expected } of cases) {
      it(name, () => {
        expect(ids(withAffinity(order, pinned))).to.deep.equal(expected);
      });
    }

    it('gives one session the same digest every time, and two sessions two', () => {
      const header = (value: string) => () => value;
      expect(sessionOf(CONFIG, header('s-1'), null)).to.equal(sessionOf(CONFIG, header('s-1'), null));
      expect(sessionOf(CONFIG, header('s-1'), null)).to.not.equal(sessionOf(CONFIG, header('s-2'), null));
    });

    it('holds no more than max_entries sessions however many pass', async () => {
      const store = new LocalAffinityStore(10, 60_000);
      for (let i = 0; i < 1000; i++) await store.set(`s${i}`, 'r');
      expect(store.size).to.equal(10);
      expect(await store.get('s999')).to.equal('r');
      expect(await store.get('s989')).to.equal(null);
    });
  });

  describe('sessionOf', () => {
    it('reads the configured header, or the key id, as a digest; none without one', () => {
      const header = (name: string) => (name === 'x-claude-code-session-id' ? 'session-1' : '');
      const fromHeader = sessionOf(CONFIG, header, 'key-1');
      expect(fromHeader).to.be.a('string').and.not.include('session-1');
      expect(sessionOf(CONFIG, () => '', 'key-1')).to.equal(null);
      expect(sessionOf({ ...CONFIG, key: 'api_key' }, header, 'key-1')).to.not.equal(fromHeader);
      expect(sessionOf({ ...CONFIG, key: 'api_key' }, header, null)).to.equal(null);
      expect(routeId(target('a', 0))).to.equal('a/m');
    });
  });

  describe('LocalAffinityStore', () => {
    it('forgets the least recently used session past its bound', async () => {
      const store = new LocalAffinityStore(3, 60_000);
      for (const key of ['s1', 's2', 's3']) await store.set(key, `${key}-route`);
      await store.get('s1');
      await store.set('s4', 's4-route');
      expect(store.size).to.equal(3);
      expect(await store.get('s2')).to.equal(null);
      expect(await store.get('s1')).to.equal('s1-route');
    });

    it('forgets a session after its time to live', async () => {
      let now = 0;
      const store = new LocalAffinityStore(3, 1000, () => now);
      await store.set('s', 'r');
      now = 999;
      expect(await store.get('s')).to.equal('r');
      now = 2000;
      expect(await store.get('s')).to.equal(null);
    });
  });

  describe('RedisAffinityStore', function () {
    const prefix = redisTestPrefix('affinity');
    const clients: Redis[] = [];

    before(async function () {
      const problem = await redisProblem();
      if (problem !== null) {
        console.log(`      skipped: ${problem}`);
        this.skip();
      }
    });

    after(async () => {
      for (const client of clients) client.disconnect();
      await prefix.clear();
    });

    function instance(url = REDIS_URL): { store: RedisAffinityStore; local: LocalAffinityStore } {
      const redis = new Redis(url, { maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null, lazyConnect: false });
      redis.on('error', () => undefined);
      clients.push(redis);
      const local = new LocalAffinityStore(10, 60_000);
      return { store: new RedisAffinityStore(redis, prefix.prefix, 60_000, local, pino({ level: 'silent' })), local };
    }

    it('shares a session\'s route between instances', async () => {
      const a = instance();
      const b = instance();
      await new Promise((resolve) => setTimeout(resolve, 50));
      await a.store.set('model|session', 'bedrock/m');
      expect(await b.store.get('model|session')).to.equal('bedrock/m');
    });

    it('answers from its own table while Redis fails', async () => {
      const down = instance('redis://127.0.0.1:9');
      await down.store.set('model|s', 'vertex/m');
      expect(await down.store.get('model|s')).to.equal('vertex/m');
    });
  });
});
