/**
 * The client `connectRedis` makes from `redis.cluster`, and every part of Tollgate that keeps state
 * in Redis, on a Redis Cluster of the test's own (three primaries, a replica each): the rate limiter's
 * one script over the key's and the account's counters, minted responses' write of several keys at
 * once, and scans, each met by no CROSSSLOT; a script the servers forgot (SCRIPT FLUSH on every
 * node) is loaded again where it runs. Skipped, saying so, without redis-server or redis-cli.
 */
import { expect } from 'chai';
import pino from 'pino';
import type { Cluster } from 'ioredis';
import type { RedisConfig } from '../../src/config/types';
import { RedisLimiter } from '../../src/rate-limit/redis';
import { closeRedis, connectRedis, scanEveryPrimary, type RedisClient } from '../../src/shared-state/redis';
import { LocalMintedStore } from '../../src/translators/responses-to-messages/minted';
import { RedisMintedStore } from '../../src/translators/responses-to-messages/minted-redis';
import { redisClusterProblem, startOwnCluster, type OwnCluster } from '../helpers/redis-cluster';

const LIMITS = { rpm: 3, tpm: 0, concurrency: 0 };

describe('shared state: a Redis client on a Redis Cluster', function () {
  this.timeout(120_000);
  let cluster: OwnCluster;
  let client: RedisClient;

  before(async function () {
    const problem = redisClusterProblem();
    if (problem !== null) {
      console.log(`      ${problem}: suite skipped`);
      this.skip();
    }
    cluster = await startOwnCluster();
    const config: RedisConfig = { url: '', cluster: cluster.seeds, key_prefix: 'cluster-client:', command_timeout_ms: 2000 };
    client = await connectRedis(config, { connectionName: 'cluster-client-test' });
  });

  after(async () => {
    if (client !== undefined) await closeRedis(client);
    await cluster?.close();
  });

  it('reaches every primary: keys of many slots are written, read back and found by a scan of each', async () => {
    expect(client.isCluster).to.equal(true);
    const names = Array.from({ length: 60 }, (_, index) => `cluster-client:k${index}`);
    for (const name of names) await client.set(name, name);
    for (const name of names) expect(await client.get(name)).to.equal(name);
    const slots = await Promise.all(names.map((name) => cluster.slotOf(name)));
    const owners = new Set(await Promise.all(slots.map(async (slot) => (await cluster.primaryOf(slot)).port)));
    expect(owners.size, 'the keys lie on every primary').to.equal(3);
    expect((await scanEveryPrimary(client, 'cluster-client:k*')).sort()).to.deep.equal([...names].sort());
  });

  it("counts a key's and its account's rate limits in one script, and loads it again on a node that forgot it", async () => {
    const limiter = new RedisLimiter(client, { prefix: 'cluster-client:', leaseMs: 60_000 });
    const subjects = [
      { id: 'key:k1', limits: LIMITS },
      { id: 'account:a1', limits: LIMITS },
    ];
    const decisions = [];
    for (let index = 0; index < 3; index++) decisions.push(await limiter.acquire({ requestId: `r${index}`, subjects, tokens: 0 }));
    expect(decisions.every((decision) => decision.ok)).to.equal(true);
    for (const node of (client as Cluster).nodes('master')) await node.script('FLUSH');
    const refused = await limiter.acquire({ requestId: 'r4', subjects, tokens: 0 });
    expect(refused.ok).to.equal(false);
  });

  it('writes a minted response and its items in one step, and resolves it from another client', async () => {
    const silent = pino({ level: 'silent' });
    const other = await connectRedis({ url: '', cluster: cluster.seeds, key_prefix: 'cluster-client:', command_timeout_ms: 2000 });
    try {
      const a = new RedisMintedStore(client, 'cluster-client:minted:', new LocalMintedStore(), silent);
      const b = new RedisMintedStore(other, 'cluster-client:minted:', new LocalMintedStore(), silent);
      const item = { type: 'message', id: 'm1', role: 'assistant', content: [] };
      await a.remember('alice', 'r1', { previous: null, input: [{ role: 'user', content: 'one' }], output: [item] });
      expect(await b.conversation('alice', 'r1')).to.deep.equal([{ role: 'user', content: 'one' }, item]);
      expect(await b.item('alice', 'm1')).to.deep.equal(item);
      expect(await b.item('bob', 'm1')).to.equal(undefined);
    } finally {
      await closeRedis(other);
    }
  });
});
