/**
 * The client `connectRedis` makes from `redis.sentinels`: it finds the primary through the Sentinels,
 * and after the primary is killed (-9) it reaches the replica they promote, on its own, with no
 * command sent in the meantime waiting longer than the command timeout. Against a Sentinel
 * deployment of the test's own (test/helpers/redis-sentinel.ts); skipped, saying so, without one.
 */
import { expect } from 'chai';
import type { RedisConfig } from '../../src/config/types';
import { closeRedis, connectRedis, type RedisClient } from '../../src/shared-state/redis';
import { PROMOTION_BOUND_MS, redisSentinelProblem, startOwnSentinels, type OwnSentinels } from '../helpers/redis-sentinel';

const COMMAND_TIMEOUT_MS = 500;

describe('shared state: a Redis client through Sentinel', function () {
  this.timeout(60_000);
  let deployment: OwnSentinels;
  let client: RedisClient;

  before(async function () {
    const problem = redisSentinelProblem();
    if (problem !== null) {
      console.log(`      ${problem}: suite skipped`);
      this.skip();
    }
    deployment = await startOwnSentinels();
    const config: RedisConfig = { url: '', sentinels: deployment.sentinels, name: deployment.name, key_prefix: 'sentinel-client:', command_timeout_ms: COMMAND_TIMEOUT_MS };
    client = await connectRedis(config, { connectionName: 'sentinel-client-test' });
  });

  after(async () => {
    if (client !== undefined) await closeRedis(client);
    await deployment?.close();
  });

  it('writes to the primary the Sentinels name', async () => {
    expect(client.status).to.equal('ready');
    await client.set('sentinel-client:k', 'v');
    expect(await client.info('server')).to.include(`tcp_port:${await deployment.primaryPort()}\r\n`);
  });

  it('follows a failover to the promoted replica, each command in between failing fast', async () => {
    const old = await deployment.killPrimary();
    const killedAt = performance.now();
    const slowest = { ms: 0 };
    let written = false;
    // Writes every 50 ms until one lands: each either succeeds or fails within the command timeout.
    while (!written) {
      const started = performance.now();
      written = await client.set('sentinel-client:after', String(Date.now())).then(
        () => true,
        () => false,
      );
      slowest.ms = Math.max(slowest.ms, performance.now() - started);
      expect(performance.now() - killedAt, 'writes again within the bound').to.be.below(PROMOTION_BOUND_MS);
      if (!written) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const promoted = await deployment.promoted(old, 1000);
    expect(promoted).to.not.equal(old);
    expect(await client.info('server'), 'connected to the promoted replica').to.include(`tcp_port:${promoted}\r\n`);
    // The replica had the primary's data: a copy, as the book's copied-state rule assumes.
    expect(await client.get('sentinel-client:k')).to.equal('v');
    // Connect and command timeouts: no command waited much past them while there was no primary.
    expect(slowest.ms, 'the slowest command while failing over').to.be.below(COMMAND_TIMEOUT_MS + 2000 + 1000);
  });
});

describe('shared state: a Redis client through Sentinels that do not answer', () => {
  it('returns after the first round over them, unready, so the gateway starts and says Redis is down', async () => {
    // Port 1 on the loopback refuses at once: no Sentinel there.
    const config: RedisConfig = { url: '', sentinels: ['127.0.0.1:1', '127.0.0.1:2'], name: 'none', key_prefix: 'x:', command_timeout_ms: COMMAND_TIMEOUT_MS };
    const errors: string[] = [];
    const started = performance.now();
    const client = await connectRedis(config, { onError: (error) => errors.push(error.message) });
    try {
      expect(performance.now() - started, 'returned after one round').to.be.below(5000);
      expect(client.status).to.not.equal('ready');
      expect(errors.join('\n')).to.match(/All sentinels are unreachable/);
      await expectRejects(client.set('x:k', 'v'));
    } finally {
      await closeRedis(client);
    }
  });
});

async function expectRejects(promise: Promise<unknown>): Promise<void> {
  const outcome = await promise.then(
    () => 'resolved',
    () => 'rejected',
  );
  expect(outcome).to.equal('rejected');
}
