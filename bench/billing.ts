/**
 * What billing costs per request, and how fast the ledger takes charges. Prints figures; asserts
 * nothing. Back ends that are not reachable (PostgreSQL, Redis) are skipped with a line saying so.
 *
 *   npm run build && node dist/bench/billing.js            (ROUNDS=… to change the sample count)
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import type { BalanceBook } from '../src/billing/book';
import { openRedisBook } from '../src/billing/redis-book';
import { LocalBook } from '../src/billing/local-book';
import { StoreBook } from '../src/billing/store-book';
import { openStore } from '../src/store/open';
import type { ChargeRecord, Store } from '../src/store/store';
import { LedgerWriter } from '../src/billing/ledger-writer';

const ROUNDS = Number(process.env.ROUNDS ?? 5000);
const LEDGER_RECORDS = Number(process.env.LEDGER_RECORDS ?? 20000);
const PG_ADMIN_URL = process.env.TOLLGATE_BENCH_PG_URL ?? 'postgres://127.0.0.1:5432/test';
const REDIS_URL = process.env.TOLLGATE_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

async function account(store: Store): Promise<{ accountId: string; keyId: string }> {
  const created = await store.createAccount({ name: `bench-${randomBytes(4).toString('hex')}`, role: 'user' });
  const key = await store.createKey({ accountId: created.id, name: null, hash: randomBytes(32), prefix: 'sk-bench', last4: 'xxxx' });
  await store.credit({ accountId: created.id, amount: 10n ** 15n, kind: 'admin', actor: 'bench', note: 'bench' });
  return { accountId: created.id, keyId: key.id };
}

function charge(requestId: string, who: { accountId: string; keyId: string }): ChargeRecord {
  return {
    requestId, ...who, model: 'm', provider: 'p', endpoint: 'chat', inputTokens: 100, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0,
    outputTokens: 50, cost: 350_000n, clientRequestId: null, toolCalls: {}, held: 0n, overage: 0n, unbilled: 0n, prices: null, usageSource: 'upstream', status: 200, outcome: 'delivered', latencyMs: 1, createdAt: new Date(),
  };
}

/** Median and p99 of hold + settle (+ queueing the ledger write) per request, in µs. */
async function reserveAndSettle(book: BalanceBook, store: Store): Promise<string> {
  const who = await account(store);
  const writer = new LedgerWriter(store, { intervalMs: 10, maxRecords: 500, onWritten: (charges) => book.written?.(charges) }, pino({ level: 'silent' }));
  const samples: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const requestId = `req_${i}_${randomBytes(4).toString('hex')}`;
    const start = process.hrtime.bigint();
    const held = await book.hold({ requestId, ...who, amount: 5_100_000n, expiresAt: new Date(Date.now() + 60_000) });
    if (!held.ok) throw new Error('hold refused');
    const settled = charge(requestId, who);
    await book.settle(settled);
    writer.enqueue(settled);
    samples.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  await writer.close();
  samples.sort((a, b) => a - b);
  return `${samples[Math.floor(ROUNDS / 2)].toFixed(1)} | ${samples[Math.floor(ROUNDS * 0.99)].toFixed(1)}`;
}

/** Charges per second through recordCharges in batches of 500. */
async function ledgerThroughput(store: Store): Promise<string> {
  const who = await account(store);
  const batches: ChargeRecord[][] = [];
  for (let i = 0; i < LEDGER_RECORDS; i += 500) {
    batches.push(Array.from({ length: 500 }, (_, j) => charge(`led_${i + j}_${randomBytes(4).toString('hex')}`, who)));
  }
  const start = process.hrtime.bigint();
  for (const batch of batches) await store.recordCharges(batch);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return `${Math.round(LEDGER_RECORDS / seconds).toLocaleString('en-US')}`;
}

async function withPostgres<T>(work: (store: Store) => Promise<T>): Promise<T | null> {
  const { Client } = await import('pg');
  const admin = new Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 1000 });
  try {
    await admin.connect();
  } catch {
    return null;
  }
  const db = `tollgate_bench_${randomBytes(4).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${db}`);
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${db}`;
  const store = openStore({ url: url.toString() });
  try {
    await store.migrate();
    return await work(store);
  } finally {
    await store.close();
    await admin.query(`DROP DATABASE ${db}`);
    await admin.end();
  }
}

async function main(): Promise<void> {
  const rows: string[] = [];
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-bench-'));
  const sqlite = openStore({ url: `sqlite:${path.join(dir, 'ledger.db')}` });
  await sqlite.migrate();
  rows.push(`| hold + settle, embedded store (SQLite; holds in process memory) | ${await reserveAndSettle(new LocalBook(sqlite), sqlite)} |`);
  rows.push(`| hold + settle, SQLite with row holds (one write transaction each) | ${await reserveAndSettle(new StoreBook(sqlite), sqlite)} |`);
  let redisBook: BalanceBook | null = null;
  try {
    redisBook = await openRedisBook({ url: REDIS_URL, key_prefix: `tollgate-bench:${randomBytes(4).toString('hex')}:`, command_timeout_ms: 1000 }, sqlite);
    rows.push(`| hold + settle, Redis book (Lua, one round trip each) | ${await reserveAndSettle(redisBook, sqlite)} |`);
  } catch (error) {
    rows.push(`| hold + settle, Redis book | skipped: ${(error as Error).message} |`);
  } finally {
    await redisBook?.close();
  }

  const ledger: string[] = [`| SQLite (file, WAL) | ${await ledgerThroughput(sqlite)} |`];
  await sqlite.close();
  rmSync(dir, { recursive: true, force: true });
  const pg = await withPostgres(async (store) => {
    const throughput = await ledgerThroughput(store);
    rows.push(`| hold + settle, PostgreSQL without Redis (row holds; ledger batches every 10 ms share the disk) | ${await reserveAndSettle(new StoreBook(store), store)} |`);
    return throughput;
  });
  ledger.push(pg === null ? `| PostgreSQL | skipped: not reachable at ${PG_ADMIN_URL} |` : `| PostgreSQL | ${pg} |`);

  console.log(`Billing cost per request (${ROUNDS} sequential requests, Node ${process.version})\n`);
  console.log('| Back end | median µs | p99 µs |');
  console.log('|---|---:|---:|');
  for (const row of rows) console.log(row);
  console.log(`\nLedger write throughput (${LEDGER_RECORDS} charges in batches of 500)\n`);
  console.log('| Store | charges/s |');
  console.log('|---|---:|');
  for (const row of ledger) console.log(row);
}

void main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
