/**
 * Two gateway instances over one fresh PostgreSQL database and one Redis key prefix, as two processes
 * behind a load balancer would run, plus a fake upstream and a third-party store connection (like the
 * CLI) for setting up and reading the ledger. Null, with the reason, when either service is absent.
 */
import pino from 'pino';
import { parseConfig } from '../../src/config/load';
import { startGateway, type Gateway } from '../../src/gateway';
import { openStore } from '../../src/store/open';
import type { Store } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from './fake-upstream';
import { createTestDatabase, postgresProblem, redisProblem, redisTestPrefix } from './services';

export interface SharedInstances {
  readonly gateways: readonly [Gateway, Gateway];
  readonly fake: FakeUpstream;
  readonly store: Store;
  readonly redisPrefix: string;
  /** Stops everything and removes the database and the Redis keys. */
  close(): Promise<void>;
}

export async function startSharedInstances(
  name: string,
  yamlFor: (upstreamUrl: string, databaseUrl: string, redisPrefix: string) => string,
): Promise<SharedInstances | { problem: string }> {
  const problem = (await postgresProblem()) ?? (await redisProblem());
  if (problem !== null) return { problem };
  const database = await createTestDatabase();
  const redis = redisTestPrefix(name);
  const fake = await startFakeUpstream();
  const config = parseConfig(yamlFor(fake.url, database.url, redis.prefix), `${name}.yaml`, {});
  // Each instance opens its own pool and its own Redis connections, as separate processes would.
  const gateways = [
    await startGateway({ config, port: 0, logger: pino({ level: 'silent' }) }),
    await startGateway({ config, port: 0, logger: pino({ level: 'silent' }) }),
  ] as const;
  const store = openStore(config.store);
  return {
    gateways,
    fake,
    store,
    redisPrefix: redis.prefix,
    async close() {
      await fake.close();
      for (const gateway of gateways) await gateway.stop(200);
      await store.close();
      await redis.clear();
      await database.drop();
    },
  };
}
