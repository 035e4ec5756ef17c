/**
 * docs/faults.md#f17: PostgreSQL ends the gateway's connections under load (what a failover or a restart
 * does, here `pg_terminate_backend` on every backend the gateway holds, again and again). The process
 * must not exit (an unhandled 'error' on a checked-out client would end this mocha run), every request
 * answers 200 or a 503 that was never served, and every served request is charged exactly once.
 * Run on the store's own book and on the Redis book. Skipped, saying so, without the services.
 */
import { expect } from 'chai';
import pino from 'pino';
import { Client } from 'pg';
import { issueApiKey } from '../../src/auth/issue-key';
import { parseConfig } from '../../src/config/load';
import { startGateway, type Gateway } from '../../src/gateway';
import { openStore } from '../../src/store/open';
import type { Store } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { createTestDatabase, PG_ADMIN_URL, postgresProblem, REDIS_URL, redisProblem, redisTestPrefix, type TestDatabase } from '../helpers/services';
import { PROVIDER_KEYS } from '../helpers/test-gateway';

const REQUESTS = 240;
const CONCURRENCY = 16;

function yaml(upstreamUrl: string, storeUrl: string, redis: string): string {
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "${storeUrl}", pool_size: 4 }
${redis}
providers:
  openai: { protocol: openai, base_url: ${upstreamUrl}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  gpt-priced: { family: openai, routes: [{ provider: openai }], price: { input: 1, output: 5 }, max_output_tokens: 1000, context_window: 200000 }
plugins:
  billing: { flush_interval_ms: 5, hold_ttl_ms: 600000 }
`;
}

/**
 * Ends every connection the gateway has open to `database`, again and again until `stop` resolves,
 * each round as soon as the gateway has served a request since the last. Paced by the gateway's
 * progress rather than a clock, so a slow or loaded machine meets the same fault (every round hits a
 * gateway that has just recovered: reconnecting, retrying, its ledger behind) and not a denser one.
 */
async function terminateRepeatedly(database: string, servedSoFar: () => number, stop: Promise<void>): Promise<number> {
  const admin = new Client({ connectionString: PG_ADMIN_URL });
  admin.on('error', () => undefined);
  await admin.connect();
  let stopped = false;
  void stop.then(() => (stopped = true));
  let terminated = 0;
  try {
    while (!stopped) {
      const { rows } = await admin.query<{ ended: boolean }>(
        `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
          WHERE datname = $1 AND application_name LIKE 'tollgate%' AND pid <> pg_backend_pid()`,
        [database],
      );
      terminated += rows.filter((row) => row.ended).length;
      const servedAtTermination = servedSoFar();
      while (!stopped && servedSoFar() === servedAtTermination) await sleep(5);
    }
  } finally {
    await admin.end();
  }
  return terminated;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

for (const book of ['store', 'redis'] as const) {
  describe(`faults: pg_terminate_backend under load (${book} book)`, function () {
    this.timeout(60_000);
    let database: TestDatabase;
    let fake: FakeUpstream;
    let gateway: Gateway;
    let store: Store;
    let clearRedis: () => Promise<void> = async () => undefined;

    before(async function () {
      const problem = (await postgresProblem()) ?? (book === 'redis' ? await redisProblem() : null);
      if (problem !== null) {
        console.log(`      ${problem}: suite skipped`);
        this.skip();
      }
      database = await createTestDatabase();
      fake = await startFakeUpstream();
      let redis = '';
      if (book === 'redis') {
        const prefix = redisTestPrefix('pg-terminate');
        clearRedis = prefix.clear;
        redis = `redis: { url: "${REDIS_URL}", key_prefix: "${prefix.prefix}" }`;
      }
      const config = parseConfig(yaml(fake.url, database.url, redis), 'pg-terminate.yaml', {});
      gateway = await startGateway({ config, port: 0, logger: pino({ level: 'silent' }) });
      store = openStore(config.store);
    });

    after(async () => {
      await fake?.close();
      await gateway?.stop(500);
      await store?.close();
      await clearRedis();
      await database?.drop();
    });

    it('keeps serving, and charges every served request exactly once', async () => {
      const account = await store.createAccount({ name: 'reset', role: 'user' });
      const { key } = await issueApiKey(store, { accountId: account.id, name: null });
      await store.credit({ accountId: account.id, amount: 10n ** 15n, kind: 'admin', actor: 'test', note: 'funds' });
      const body = JSON.stringify({ model: 'gpt-priced', max_tokens: 50, messages: [{ role: 'user', content: 'hello' }] });

      let finishLoad!: () => void;
      const loadDone = new Promise<void>((resolve) => (finishLoad = resolve));
      const served: string[] = [];
      const killer = terminateRepeatedly(new URL(database.url).pathname.slice(1), () => served.length, loadDone);
      const statuses: number[] = [];
      let next = 0;
      async function worker(): Promise<void> {
        while (next < REQUESTS) {
          next += 1;
          const res = await fetch(`${gateway.url}/v1/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body,
          });
          const text = await res.text();
          if (res.status !== 200 && res.status !== 503) console.log(`      unexpected ${res.status}: ${text.slice(0, 300)}`);
          statuses.push(res.status);
          if (res.status === 200) served.push(res.headers.get('x-request-id')!);
        }
      }
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      finishLoad();
      const terminated = await killer;

      expect(terminated, 'connections terminated').to.be.above(10);
      expect(statuses.filter((status) => status !== 200 && status !== 503), 'statuses other than 200 and 503').to.deep.equal([]);
      expect(served.length, 'served').to.be.above(REQUESTS / 2);

      // Every served request reaches the ledger once the writer has got through.
      const deadline = Date.now() + 20_000;
      let charges = await store.listCharges({ accountId: account.id, limit: 10_000 });
      while (charges.length < served.length && Date.now() < deadline) {
        await sleep(100);
        charges = await store.listCharges({ accountId: account.id, limit: 10_000 });
      }
      const charged = charges.map((charge) => charge.requestId);
      expect(new Set(charged).size, 'doubled').to.equal(charged.length);
      expect(served.filter((id) => !charged.includes(id)), 'served but not charged').to.deep.equal([]);
      expect(charged.filter((id) => !served.includes(id)), 'charged but not served').to.deep.equal([]);
      const totals = (await store.ledgerTotals()).find((row) => row.accountId === account.id)!;
      expect(totals.credits - totals.charges, 'stored balance').to.equal(totals.balance);
      expect(totals.held, 'held').to.equal(totals.openHolds);
      const refused = statuses.filter((status) => status === 503).length;
      console.log(`      ${terminated} backends terminated: ${served.length} served, ${refused} refused (503), ${charged.length} charged, 0 lost, 0 doubled`);
    });
  });
}
