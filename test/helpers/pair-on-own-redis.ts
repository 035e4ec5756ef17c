/**
 * The rig of the Redis restart fault suites: two gateway instances sharing a PostgreSQL database of
 * the test's own and a redis-server of its own (which the test may kill and start again), in front of
 * one fake upstream, with a store of the same database to read the ledger.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { parseConfig } from '../../src/config/load';
import { startGateway, type Gateway } from '../../src/gateway';
import { openStore } from '../../src/store/open';
import type { Store } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from './fake-upstream';
import { startOwnRedis, type OwnRedis } from './redis-server';
import { createTestDatabase, type TestDatabase } from './services';

export interface OwnRedisPair {
  readonly database: TestDatabase;
  readonly redis: OwnRedis;
  readonly fake: FakeUpstream;
  readonly store: Store;
  /** Instance a, then b; a test may take one out to stop it itself. */
  readonly gateways: Gateway[];
  stop(): Promise<void>;
}

/** An instance's gateway.yaml, given the fake upstream's, the database's and Redis's URLs and its own outbox file. */
export type PairYaml = (upstreamUrl: string, storeUrl: string, redisUrl: string, outbox: string) => string;

export async function startPairOnOwnRedis(yaml: PairYaml, label: string): Promise<OwnRedisPair> {
  const database = await createTestDatabase();
  const redis = await startOwnRedis();
  const fake = await startFakeUpstream();
  const folder = mkdtempSync(path.join(tmpdir(), `tollgate-${label}-`));
  const gateways: Gateway[] = [];
  for (const name of ['a', 'b']) {
    const config = parseConfig(yaml(fake.url, database.url, redis.url, path.join(folder, name)), `${label}.yaml`, {});
    gateways.push(await startGateway({ config, port: 0, logger: pino({ level: 'silent' }) }));
  }
  const store = openStore({ url: database.url });
  return {
    database,
    redis,
    fake,
    store,
    gateways,
    async stop() {
      for (const gateway of gateways.splice(0)) await gateway.stop(200);
      await store.close();
      await fake.close();
      await redis.close();
      await database.drop();
      rmSync(folder, { recursive: true, force: true });
    },
  };
}
