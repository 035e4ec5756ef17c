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
import { holdAmount } from '../src/billing/hold-amount';
import { nanoPrice } from '../src/billing/prices';
import { requestReach } from '../src/protocols/request-reach';
import type { ModelConfig } from '../src/config/types';

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
    outputTokens: 50,
    imageInputTokens: 0,
    imageOutputTokens: 0, cost: 350_000n, clientRequestId: null, toolCalls: {}, held: 0n, overage: 0n, unbilled: 0n, prices: null, serviceTier: null, longContext: false, usageSource: 'upstream', status: 200, outcome: 'delivered', latencyMs: 1, createdAt: new Date(),
  };
}

/** Median and p99 of hold + settle (+ queueing the ledger write) per request, in µs. */
async function reserveAndSettle(book: BalanceBook, store: Store): Promise<string> {
  const who = await account(store);
  const writer = new LedgerWriter(store, { intervalMs: 10, maxRecords: 500, onWritten: (charges) => book.written(charges) }, pino({ level: 'silent' }));
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

/** A chat request of a typical size (about 6 KB), parsed as the kernel hands it to billing. */
const SAMPLE_BODY = Buffer.from(
  JSON.stringify({
    model: 'gpt-bench',
    max_tokens: 1024,
    messages: Array.from({ length: 12 }, (_, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content: 'lorem ipsum dolor sit amet '.repeat(18) })),
  }),
);

/** Median and p99 of sizing one request's hold (its reach, then the amount), in µs. */
function holdSizing(): string {
  const body = JSON.parse(SAMPLE_BODY.toString()) as Record<string, unknown>;
  const price = nanoPrice({ input: 3, cache_write: 3.75, cache_write_1h: 6, cache_hit: 0.3, output: 15, image_input: 0, image_output: 0, tool_calls: { web_search: 10 } });
  const model = { max_output_tokens: 64000, context_window: 200000 } as ModelConfig;
  const samples: number[] = [];
  for (let i = 0; i < ROUNDS * 4; i++) {
    const started = performance.now();
    const reach = requestReach('chat', body, SAMPLE_BODY);
    holdAmount({ rawBytes: SAMPLE_BODY.length, reach, referencedTokens: 0, defaultToolUses: 10 }, model, price);
    samples.push((performance.now() - started) * 1000);
  }
  return percentiles(samples);
}

function percentiles(samples: number[]): string {
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))].toFixed(2);
  return `${at(0.5)} | ${at(0.99)}`;
}

async function main(): Promise<void> {
  const rows: string[] = [`| sizing the hold (request reach + amount; ${SAMPLE_BODY.length}-byte chat body), no I/O | ${holdSizing()} |`];
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
