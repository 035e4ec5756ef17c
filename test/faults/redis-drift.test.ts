/**
 * docs/faults.md#f18 and f19 on PostgreSQL + Redis:
 * - an account's Redis balance lost while the ledger is stalled (its row locked) is reseeded from the
 *   ledger less the charges still queued, so the account cannot spend them twice;
 * - drift injected into a Redis balance is reported by `tollgate ledger verify` (exit 1, naming the
 *   account) and by tollgate_ledger_drift_units, and `tollgate ledger heal` repairs it.
 * Skipped, saying so, without the services.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import pino from 'pino';
import { Client } from 'pg';
import { issueApiKey } from '../../src/auth/issue-key';
import { runCli } from '../../src/cli';
import { parseConfig } from '../../src/config/load';
import { startGateway, type Gateway } from '../../src/gateway';
import { openStore } from '../../src/store/open';
import type { Store } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { createTestDatabase, postgresProblem, REDIS_URL, redisProblem, redisTestPrefix, type TestDatabase } from '../helpers/services';
import { PROVIDER_KEYS } from '../helpers/test-gateway';

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe('faults: Redis balances against the ledger', function () {
  this.timeout(60_000);
  let database: TestDatabase;
  let prefix: ReturnType<typeof redisTestPrefix>;
  let fake: FakeUpstream;
  let gateway: Gateway;
  let store: Store;
  let redis: Redis;
  let dir: string;
  let configFile: string;

  before(async function () {
    const problem = (await postgresProblem()) ?? (await redisProblem());
    if (problem !== null) {
      console.log(`      ${problem}: suite skipped`);
      this.skip();
    }
    database = await createTestDatabase();
    prefix = redisTestPrefix('drift');
    fake = await startFakeUpstream();
    dir = mkdtempSync(path.join(tmpdir(), 'tollgate-drift-'));
    configFile = path.join(dir, 'gateway.yaml');
    const yaml = `
version: 1
server: { host: 127.0.0.1 }
store: { url: "${database.url}", statement_timeout_ms: 10000 }
redis: { url: "${REDIS_URL}", key_prefix: "${prefix.prefix}" }
providers:
  openai: { protocol: openai, base_url: ${fake.url}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  gpt-priced: { family: openai, routes: [{ provider: openai }], price: { input: 1, output: 5 }, max_output_tokens: 1000, context_window: 200000 }
plugins:
  billing: { flush_interval_ms: 5, max_queued_age_ms: 20000, drift_check_interval_ms: 100 }
`;
    writeFileSync(configFile, yaml);
    gateway = await startGateway({ config: parseConfig(yaml, 'drift.yaml', {}), port: 0, logger: pino({ level: 'silent' }) });
    store = openStore({ url: database.url });
    redis = new Redis(REDIS_URL);
  });

  after(async () => {
    await fake?.close();
    await gateway?.stop(500);
    await store?.close();
    redis?.disconnect();
    await prefix?.clear();
    await database?.drop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  async function fundedKey(name: string, amount: bigint): Promise<{ accountId: string; key: string }> {
    const account = await store.createAccount({ name, role: 'user' });
    const { key } = await issueApiKey(store, { accountId: account.id, name: null });
    await store.credit({ accountId: account.id, amount, kind: 'admin', actor: 'test', note: 'funds' });
    return { accountId: account.id, key };
  }

  async function ask(key: string): Promise<number> {
    const res = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-priced', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    });
    await res.arrayBuffer();
    return res.status;
  }

  async function tollgate(...argv: string[]): Promise<{ status: number; out: string[] }> {
    const out: string[] = [];
    const status = await runCli([...argv, '--config', configFile], { out: (line) => out.push(line), err: (line) => out.push(line), env: {}, cwd: dir });
    return { status, out };
  }

  async function driftUnits(): Promise<number> {
    const text = await (await fetch(`${gateway.url}/metrics`)).text();
    const line = text.split('\n').find((candidate) => candidate.startsWith('tollgate_ledger_drift_units '));
    return Number(line?.split(' ')[1] ?? NaN);
  }

  /** The account's Redis balance and what the instances say they have not written yet. */
  async function liveOf(accountId: string): Promise<{ balance: string | undefined; unwritten: bigint }> {
    const hash = await redis.hgetall(`${prefix.prefix}account:${accountId}`);
    const unwritten = Object.entries(hash)
      .filter(([name]) => name.startsWith('unwritten:'))
      .reduce((sum, [, value]) => sum + BigInt(value), 0n);
    return { balance: hash.balance, unwritten };
  }

  async function chargesOf(accountId: string, count: number): Promise<void> {
    const deadline = Date.now() + 10_000;
    while ((await store.listCharges({ accountId, limit: 1000 })).length < count) {
      if (Date.now() > deadline) throw new Error(`${count} charges were not written in time`);
      await sleep(20);
    }
  }

  it('reseeds a lost Redis balance less the charges still queued: nothing is spent twice', async () => {
    const { accountId, key } = await fundedKey('reseed', 10n ** 12n);
    for (let i = 0; i < 3; i++) expect(await ask(key)).to.equal(200);
    await chargesOf(accountId, 3);

    const locker = new Client({ connectionString: database.url });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
    for (let i = 0; i < 5; i++) expect(await ask(key)).to.equal(200);
    const [liveBefore] = await redis.hmget(`${prefix.prefix}account:${accountId}`, 'balance');
    // Redis loses the account (a restart without persistence): the next request reseeds it.
    await redis.del(`${prefix.prefix}account:${accountId}`);
    expect(await ask(key)).to.equal(200);
    const ledgerWhileStalled = (await store.balance(accountId)).balance;
    const { balance: liveAfter, unwritten } = await liveOf(accountId);
    const perRequest = (10n ** 12n - ledgerWhileStalled) / 3n;
    expect(unwritten, 'unwritten after the reseed').to.equal(perRequest * 6n);
    expect(BigInt(liveAfter!), 'live balance after the reseed').to.equal(BigInt(liveBefore!) - perRequest);
    await locker.query('ROLLBACK');
    await locker.end();

    await chargesOf(accountId, 9);
    const { balance: liveEnd, unwritten: unwrittenEnd } = await liveOf(accountId);
    expect(unwrittenEnd).to.equal(0n);
    expect(BigInt(liveEnd!)).to.equal((await store.balance(accountId)).balance);
    const charges = await store.listCharges({ accountId, limit: 1000 });
    expect(charges.filter((charge) => charge.cost === 0n), 'zero-cost rows').to.deep.equal([]);
  });

  it('verify counts the unwritten charges of a dead instance as drift: its crash lost them', async () => {
    const { accountId, key } = await fundedKey('crashed', 10n ** 12n);
    expect(await ask(key)).to.equal(200);
    await chargesOf(accountId, 1);
    // What a killed instance leaves: a charge taken from the live balance that its writer never wrote.
    await redis.hincrby(`${prefix.prefix}account:${accountId}`, 'balance', -7_000_000);
    await redis.hincrby(`${prefix.prefix}account:${accountId}`, 'unwritten:dead-instance', 7_000_000);
    const found = await tollgate('ledger', 'verify');
    expect(found.status).to.equal(1);
    expect(found.out.filter((line) => line.startsWith('DRIFT')).join('\n')).to.include(accountId).and.include('-0.007');
    expect((await tollgate('ledger', 'heal')).status).to.equal(0);
    expect((await tollgate('ledger', 'verify')).status).to.equal(0);
  });

  it('verify names an account whose Redis balance drifted and exits 1; heal repairs it; the gauge follows', async () => {
    const { accountId, key } = await fundedKey('drifted', 10n ** 12n);
    expect(await ask(key)).to.equal(200);
    await chargesOf(accountId, 1);
    const clean = await tollgate('ledger', 'verify');
    expect(clean.status, clean.out.join('\n')).to.equal(0);

    await redis.hincrby(`${prefix.prefix}account:${accountId}`, 'balance', 5_000_000);
    const found = await tollgate('ledger', 'verify');
    expect(found.status).to.equal(1);
    const driftLines = found.out.filter((line) => line.startsWith('DRIFT'));
    expect(driftLines).to.have.length(1);
    expect(driftLines[0]).to.include('drifted').and.include(accountId).and.include('0.005');
    const deadline = Date.now() + 5000;
    while ((await driftUnits()) !== 0.005 && Date.now() < deadline) await sleep(50);
    expect(await driftUnits()).to.equal(0.005);

    const healed = await tollgate('ledger', 'heal');
    expect(healed.status, healed.out.join('\n')).to.equal(0);
    expect(healed.out.join('\n')).to.include(accountId);
    expect((await tollgate('ledger', 'verify')).status).to.equal(0);
    expect(await ask(key)).to.equal(200);
    await chargesOf(accountId, 2);
    expect((await tollgate('ledger', 'verify')).status).to.equal(0);
    while ((await driftUnits()) !== 0 && Date.now() < deadline + 5000) await sleep(50);
    expect(await driftUnits()).to.equal(0);
  });
});
