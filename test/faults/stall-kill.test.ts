/**
 * docs/faults.md#f15 without the outbox (billing.outbox_max_bytes: 0; outbox-faults.test.ts covers it
 * with one): the store stalls (the account's row locked for 2 s by another session) under load,
 * then the gateway is killed (SIGKILL, by pid). What is lost is bounded by billing.max_queued_charges
 * (here 20): past it, or once the oldest unwritten charge is max_queued_age_ms old, paid requests get
 * 503 billing_unavailable with retry-after instead of piling up unwritten charges.
 * The gateway runs as a child process (PostgreSQL ledger, Redis book). Skipped without the services.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openSqlite } from '../../src/store/sqlite-driver';
import { expect } from 'chai';
import { Client } from 'pg';
import { issueApiKey } from '../../src/auth/issue-key';
import { PACKAGE_ROOT } from '../../src/paths';
import { openStore } from '../../src/store/open';
import type { Store } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { TEST_SECRET_ENV } from '../helpers/test-secret-key';
import { createTestDatabase, postgresProblem, REDIS_URL, redisProblem, redisTestPrefix, type TestDatabase } from '../helpers/services';
import { PROVIDER_KEYS } from '../helpers/test-gateway';

const CLI = path.join(PACKAGE_ROOT, 'bin', 'tollgate.js');
const MAX_QUEUED = 20;

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Holds the account's ledger lock from another session until the returned function is called. */
async function lockAccount(target: string, accountId: string): Promise<() => Promise<void>> {
  if (!target.startsWith('postgres')) {
    const locker = openSqlite(target);
    // The gateway's ledger writer may hold the write lock this instant; wait for it as the store does
    // (node:sqlite, under Node 24, waits 0 ms by default and fails at once with "database is locked").
    locker.exec('PRAGMA busy_timeout = 5000');
    locker.exec('BEGIN IMMEDIATE');
    return async () => {
      locker.exec('ROLLBACK');
      locker.close();
    };
  }
  const locker = new Client({ connectionString: target });
  await locker.connect();
  await locker.query('BEGIN');
  await locker.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
  return async () => {
    await locker.query('ROLLBACK');
    await locker.end();
  };
}

interface Scenario {
  readonly name: string;
  readonly store: 'postgres' | 'sqlite';
  /** Whether another session holds the account's lock for the 2 s before the kill. */
  readonly stall: boolean;
}

const SCENARIOS: readonly Scenario[] = [
  { name: 'PostgreSQL + Redis, account row locked 2 s', store: 'postgres', stall: true },
  { name: 'SQLite, write lock held 2 s by another connection', store: 'sqlite', stall: true },
  { name: 'PostgreSQL + Redis, no stall (the flush window alone)', store: 'postgres', stall: false },
  { name: 'SQLite, no stall (the flush window alone)', store: 'sqlite', stall: false },
];

for (const scenario of SCENARIOS) {
describe(`faults: ${scenario.name}, under load, then kill -9`, function () {
  this.timeout(60_000);
  let database: TestDatabase;
  let redis: ReturnType<typeof redisTestPrefix>;
  let fake: FakeUpstream;
  let store: Store;
  let dir: string;
  let child: ChildProcess | null = null;

  before(async function () {
    dir = mkdtempSync(path.join(tmpdir(), 'tollgate-stall-kill-'));
    fake = await startFakeUpstream();
    if (scenario.store === 'sqlite') return;
    const problem = (await postgresProblem()) ?? (await redisProblem());
    if (problem !== null) {
      console.log(`      ${problem}: suite skipped`);
      this.skip();
    }
    database = await createTestDatabase();
    redis = redisTestPrefix('stall-kill');
  });

  after(async () => {
    if (child !== null && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await fake?.close();
    await store?.close();
    await redis?.clear();
    await database?.drop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it(`loses at most max_queued_charges (${MAX_QUEUED})${scenario.stall ? ' and refuses paid requests past it' : ''}`, async () => {
    const sqliteFile = path.join(dir, 'tollgate.db');
    const storeUrl = scenario.store === 'sqlite' ? `sqlite:${sqliteFile}` : database.url;
    const redisLine = scenario.store === 'sqlite' ? '' : `redis: { url: "${REDIS_URL}", key_prefix: "${redis.prefix}" }`;
    writeFileSync(
      path.join(dir, 'gateway.yaml'),
      `
version: 1
server: { host: 127.0.0.1 }
store: { url: "${storeUrl}", statement_timeout_ms: 10000 }
${redisLine}
providers:
  openai: { protocol: openai, base_url: ${fake.url}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  gpt-priced: { family: openai, routes: [{ provider: openai }], price: { input: 1, output: 5 }, max_output_tokens: 1000, context_window: 200000 }
  gpt-free: { family: openai, routes: [{ provider: openai }], free: true }
plugins:
  billing: { flush_interval_ms: 10, max_queued_charges: ${MAX_QUEUED}, max_queued_age_ms: 500, outbox_max_bytes: 0 }
`,
    );
    store = openStore({ url: storeUrl });
    await store.migrate();
    const account = await store.createAccount({ name: 'stalled', role: 'user' });
    const { key } = await issueApiKey(store, { accountId: account.id, name: null });
    await store.credit({ accountId: account.id, amount: 10n ** 15n, kind: 'admin', actor: 'test', note: 'funds' });

    const port = await freePort();
    child = spawn(process.execPath, [CLI, 'serve', '--port', String(port)], { cwd: dir, env: { PATH: process.env.PATH, LOG_LEVEL: 'fatal', ...TEST_SECRET_ENV }, stdio: 'ignore' });
    const base = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 20_000;
    while ((await fetch(`${base}/readyz`).then((res) => res.status, () => 0)) !== 200) {
      if (Date.now() > deadline) throw new Error('the gateway did not become ready');
      await sleep(100);
    }

    const served: string[] = [];
    const refused: { retryAfter: string | null; code: string }[] = [];
    const freeServed: string[] = [];
    async function ask(model: string): Promise<void> {
      const res = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }),
      });
      const body = (await res.json()) as { error?: { code: string } };
      if (res.status === 200 && model === 'gpt-free') freeServed.push(res.headers.get('x-request-id')!);
      else if (res.status === 200) served.push(res.headers.get('x-request-id')!);
      else if (res.status === 503) refused.push({ retryAfter: res.headers.get('retry-after'), code: body.error?.code ?? '' });
      else throw new Error(`unexpected status ${res.status}`);
    }
    for (let i = 0; i < 10; i++) await ask('gpt-priced');

    // Another session locks the account's row (or the SQLite file): every ledger batch now waits.
    const unlock = scenario.stall ? await lockAccount(scenario.store === 'sqlite' ? sqliteFile : database.url, account.id) : async () => undefined;
    const stallEnds = Date.now() + 2000;
    await Promise.all(
      Array.from({ length: 8 }, async (_, worker) => {
        while (Date.now() < stallEnds) await ask(worker === 0 ? 'gpt-free' : 'gpt-priced');
      }),
    );
    child.kill('SIGKILL');
    await new Promise((resolve) => child!.once('exit', resolve));
    await unlock();

    const charged = new Set((await store.listCharges({ accountId: account.id, limit: 10_000 })).map((charge) => charge.requestId));
    const lost = served.filter((id) => !charged.has(id));
    const lostFree = freeServed.filter((id) => !charged.has(id)).length;
    const doubled = (await store.listCharges({ accountId: account.id, limit: 10_000 })).length - charged.size;
    console.log(`      served ${served.length} paid + ${freeServed.length} free, refused ${refused.length}, lost ${lost.length} paid (bound ${MAX_QUEUED}) + ${lostFree} free (cost 0), doubled ${doubled}`);
    expect(lost.length, 'charges lost').to.be.at.most(MAX_QUEUED);
    expect(doubled, 'doubled').to.equal(0);
    if (scenario.stall) expect(refused.length, 'paid requests refused while the ledger was behind').to.be.above(0);
    expect(refused.every((answer) => answer.code === 'billing_unavailable' && answer.retryAfter !== null)).to.equal(true);
    expect(freeServed.length, 'free requests served throughout').to.be.above(0);
    expect([...charged].filter((id) => !served.includes(id) && !freeServed.includes(id)), 'charged but never served').to.deep.equal([]);
  });
});
}
