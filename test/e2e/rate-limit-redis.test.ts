/**
 * Rate limits shared by two gateway instances through one Redis (docs/faults.md#e1, e2, e4): 300
 * concurrent requests against a 100-per-minute key limit admit exactly 100 between both instances,
 * every limiter key carries a TTL, and a concurrency limit holds across instances and frees its slots
 * when clients walk away. Skipped, saying so, without PostgreSQL or Redis.
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import pino from 'pino';
import { issueApiKey } from '../../src/auth/issue-key';
import { parseConfig } from '../../src/config/load';
import { startGateway, type Gateway } from '../../src/gateway';
import { openStore } from '../../src/store/open';
import type { Store } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { createTestDatabase, postgresProblem, REDIS_URL, redisProblem, redisTestPrefix, type TestDatabase } from '../helpers/services';
import { PROVIDER_KEYS } from '../helpers/test-gateway';
import { chatStream } from '../helpers/upstream-replies';

function sharedYaml(upstreamUrl: string, storeUrl: string, redisPrefix: string, streamKeyId: string): string {
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "${storeUrl}" }
redis: { url: "${REDIS_URL}", key_prefix: "${redisPrefix}" }
providers:
  openai: { protocol: openai, base_url: ${upstreamUrl}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  gpt-test: { family: openai, routes: [{ provider: openai }], free: true }
plugins:
  rate-limit:
    per_key: { rpm: 100 }
    keys:
      ${streamKeyId}: { rpm: 0, concurrency: 3 }
`;
}

interface Sent {
  readonly status: number;
  readonly remaining: string | null;
  readonly retryAfter: string | null;
  readonly code: string | null;
}

async function send(url: string, key: string): Promise<Sent> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }),
  });
  const body = (await res.json()) as { error?: { code: string } };
  return {
    status: res.status,
    remaining: res.headers.get('x-ratelimit-remaining-requests'),
    retryAfter: res.headers.get('retry-after'),
    code: body.error?.code ?? null,
  };
}

describe('e2e: rate limits shared through Redis by two instances', function () {
  this.timeout(30_000);
  let database: TestDatabase;
  let prefix: ReturnType<typeof redisTestPrefix>;
  let fake: FakeUpstream;
  let gateways: Gateway[] = [];
  let store: Store;
  let rpmKey: string;
  let streamKey: string;

  before(async function () {
    const problem = (await postgresProblem()) ?? (await redisProblem());
    if (problem !== null) {
      console.log(`      ${problem}: Redis rate-limit suite skipped`);
      this.skip();
    }
    database = await createTestDatabase();
    prefix = redisTestPrefix('rate-limit');
    fake = await startFakeUpstream();
    store = openStore({ url: database.url, connect_timeout_ms: 2000, statement_timeout_ms: 5000, pool_size: 2 });
    await store.migrate();
    const account = await store.createAccount({ name: 'limited', role: 'user' });
    rpmKey = (await issueApiKey(store, { accountId: account.id, name: 'rpm' })).key;
    const stream = await issueApiKey(store, { accountId: account.id, name: 'streams' });
    streamKey = stream.key;
    const config = parseConfig(sharedYaml(fake.url, database.url, prefix.prefix, stream.record.id), 'rate-limit-redis.yaml', {});
    // Each instance opens its own pool and its own Redis connection, as separate processes would.
    gateways = [
      await startGateway({ config, port: 0, logger: pino({ level: 'silent' }) }),
      await startGateway({ config, port: 0, logger: pino({ level: 'silent' }) }),
    ];
  });

  after(async () => {
    await fake?.close();
    for (const gateway of gateways) await gateway.stop(200);
    await store?.close();
    await prefix?.clear();
    await database?.drop();
  });

  it('admits exactly 100 of 300 concurrent requests across both instances (E1)', async () => {
    const answers = await Promise.all(Array.from({ length: 300 }, (_, i) => send(gateways[i % 2].url, rpmKey)));
    const admitted = answers.filter((answer) => answer.status === 200);
    const refused = answers.filter((answer) => answer.status === 429);
    expect(admitted, 'admitted').to.have.length(100);
    expect(refused, 'refused').to.have.length(200);
    expect(fake.requests).to.have.length(100);
    // Each admitted request saw its own count: the remainders are exactly 99 down to 0, none negative.
    expect(admitted.map((answer) => Number(answer.remaining)).sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 100 }, (_, i) => i));
    for (const answer of refused) {
      expect(answer.code).to.equal('rate_limit_exceeded');
      expect(answer.remaining).to.equal('0');
      expect(answer.retryAfter).to.match(/^\d+$/);
      expect(Number(answer.retryAfter)).to.be.within(1, 60);
    }
  });

  it('leaves every limiter key with a TTL, set by the script itself (E2)', async () => {
    expect((await send(gateways[0].url, streamKey)).status).to.equal(200);
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    try {
      const keys = await redis.keys(`${prefix.prefix}rl:*`);
      expect(keys.some((key) => key.includes(':rl:win:key:'))).to.equal(true);
      expect(keys.some((key) => key.includes(':rl:win:account:')), 'account windows only for limited accounts').to.equal(false);
      for (const key of keys) expect(await redis.pttl(key), key).to.be.within(1, 600_000);
    } finally {
      redis.disconnect();
    }
  });

  it('holds a concurrency limit across instances and frees the slots of aborted streams (E4)', async () => {
    fake.reset();
    const hanging = () => ({ ...chatStream(), events: chatStream().events.slice(0, 2), thenHang: true });
    for (let i = 0; i < 3; i++) fake.enqueue(hanging());
    const controllers = Array.from({ length: 8 }, () => new AbortController());
    const opened = await Promise.all(
      controllers.map((controller, i) =>
        fetch(`${gateways[i % 2].url}/v1/chat/completions`, {
          method: 'POST',
          signal: controller.signal,
          headers: { authorization: `Bearer ${streamKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'gpt-test', stream: true, messages: [{ role: 'user', content: 'hi' }] }),
        }),
      ),
    );
    const statuses = opened.map((res) => res.status);
    expect(statuses.filter((status) => status === 200)).to.have.length(3);
    expect(statuses.filter((status) => status === 429)).to.have.length(5);
    expect(fake.requests).to.have.length(3);
    // The slots are a lease in a sorted set whose TTL the script set with them (E2).
    const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
    try {
      const [slots] = await redis.keys(`${prefix.prefix}rl:conc:key:*`);
      expect(await redis.zcard(slots)).to.equal(3);
      expect(await redis.pttl(slots)).to.be.within(1, 600_000);
    } finally {
      redis.disconnect();
    }

    for (const controller of controllers) controller.abort();
    for (let i = 0; i < 3; i++) await fake.waitForClose(i);
    const deadline = Date.now() + 3000;
    let admitted = 0;
    while (admitted < 3 && Date.now() < deadline) {
      const answers = await Promise.all([0, 1, 0].map((g) => send(gateways[g].url, streamKey)));
      admitted = answers.filter((answer) => answer.status === 200).length;
      if (admitted < 3) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(admitted, 'three requests at once after the aborts').to.equal(3);
  });
});
