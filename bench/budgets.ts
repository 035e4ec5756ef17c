/**
 * What a budget costs on the hot path: hold + settle (+ queueing the ledger write) per request with 0,
 * 1 and 2 budgets (the key's, then the account's too), in one process, on the embedded store's book
 * and on the Redis book. Prints figures; asserts nothing. Redis is skipped, saying so, when unreachable.
 *
 *   npm run bench:budgets          (ROUNDS=… to change the sample count)
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import type { BalanceBook } from '../src/billing/book';
import { periodAt } from '../src/billing/budget-period';
import { LedgerWriter } from '../src/billing/ledger-writer';
import { LocalBook } from '../src/billing/local-book';
import { openRedisBook } from '../src/billing/redis-book';
import { openStore } from '../src/store/open';
import type { BudgetCheck, ChargeRecord, Store } from '../src/store/store';

const ROUNDS = Number(process.env.ROUNDS ?? 5000);
const REDIS_URL = process.env.TOLLGATE_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

interface Who {
  readonly accountId: string;
  readonly keyId: string;
}

async function account(store: Store): Promise<Who> {
  const created = await store.createAccount({ name: `bench-${randomBytes(4).toString('hex')}`, role: 'user' });
  const key = await store.createKey({ accountId: created.id, name: null, hash: randomBytes(32), prefix: 'sk-bench', last4: 'xxxx' });
  await store.credit({ accountId: created.id, amount: 10n ** 15n, kind: 'admin', actor: 'bench', note: 'bench' });
  return { accountId: created.id, keyId: key.id };
}

function budgetsFor(who: Who, count: number): BudgetCheck[] {
  const { start, end } = periodAt(new Date(), 'day', 'Europe/Berlin');
  const owners = [{ scope: 'key' as const, id: who.keyId }, { scope: 'account' as const, id: who.accountId }];
  return owners.slice(0, count).map((owner) => ({ ...owner, amount: 10n ** 14n, period: 'day' as const, timezone: 'Europe/Berlin', start, end }));
}

function charge(requestId: string, who: Who): ChargeRecord {
  return {
    requestId, ...who, model: 'm', provider: 'p', endpoint: 'chat', inputTokens: 100, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0,
    outputTokens: 50,
    imageInputTokens: 0,
    imageOutputTokens: 0, cost: 350_000n, clientRequestId: null, toolCalls: {}, held: 0n, overage: 0n, unbilled: 0n, prices: null, serviceTier: null,
    longContext: false, sessionId: null, requestedModel: null, servedModel: null, attempts: [], ttfbMs: null, userAgent: null, origin: null,
    usageSource: 'upstream', status: 200, outcome: 'delivered', latencyMs: 1, createdAt: new Date(),
  };
}

/** Median, p99 and mean of hold + settle per request, in µs, with `count` budgets. */
async function holdAndSettle(book: BalanceBook, store: Store, count: number): Promise<string> {
  const who = await account(store);
  const budgets = budgetsFor(who, count);
  const writer = new LedgerWriter(store, { intervalMs: 10, maxRecords: 500, onWritten: (charges) => book.written(charges) }, pino({ level: 'silent' }));
  const samples: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const requestId = `req_${i}_${randomBytes(4).toString('hex')}`;
    const start = process.hrtime.bigint();
    const held = await book.hold({ requestId, ...who, amount: 5_100_000n, expiresAt: new Date(Date.now() + 60_000), budgets });
    if (!held.ok) throw new Error(`hold refused: ${held.reason}`);
    const settled = charge(requestId, who);
    await book.settle(settled, budgets);
    writer.enqueue(settled);
    samples.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  await writer.close();
  const mean = samples.reduce((sum, sample) => sum + sample, 0) / samples.length;
  samples.sort((a, b) => a - b);
  return `${samples[Math.floor(ROUNDS / 2)].toFixed(1)} | ${samples[Math.floor(ROUNDS * 0.99)].toFixed(1)} | ${mean.toFixed(1)}`;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-bench-budgets-'));
  const rows = ['| book | budgets | p50 µs | p99 µs | mean µs |', '|---|---|---|---|---|'];
  const sqlite = openStore({ url: `sqlite:${path.join(dir, 'ledger.db')}` });
  await sqlite.migrate();
  try {
    const local = new LocalBook(sqlite);
    for (const count of [0, 1, 2]) rows.push(`| embedded store (SQLite, in-process book) | ${count} | ${await holdAndSettle(local, sqlite, count)} |`);
    let redisBook: BalanceBook | null = null;
    try {
      redisBook = await openRedisBook({ url: REDIS_URL, key_prefix: `tollgate-bench:${randomBytes(4).toString('hex')}:`, command_timeout_ms: 1000 }, sqlite);
      for (const count of [0, 1, 2]) rows.push(`| Redis book (Lua, ledger in SQLite) | ${count} | ${await holdAndSettle(redisBook, sqlite, count)} |`);
    } catch (error) {
      rows.push(`| Redis book | – | skipped: ${error instanceof Error ? error.message : String(error)} | | |`);
    } finally {
      await redisBook?.close();
    }
  } finally {
    await sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`hold + settle per request, ${ROUNDS} sequential requests each, Node ${process.version}\n`);
  for (const row of rows) console.log(row);
}

void main();
