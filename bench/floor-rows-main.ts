/**
 * The two per-request writes of a paying gateway, alone and in one process: the ledger row and the
 * request log line, each the cheapest way there is (bench/floor-ledger.ts; a plain pino line with the
 * request line's fields) beside Tollgate's own (its ledger writer and store; its logger and request
 * line). Prints one markdown table of CPU µs per row or line (process.cpuUsage: every thread, so the
 * SQLite and file writes count), the variants taking turns in rounds so machine noise hits them alike.
 * Run by bench/floor.ts; alone it is a quick A/B of a ledger or log change:
 *
 *   node dist/bench/floor-rows-main.js      BENCH_ROUNDS (6) rounds of BENCH_ROWS (34,200) rows per variant, batches of 57
 *   BENCH_VARIANTS=1,3                      only those rows of the table (for a profiler or callgrind)
 *
 * Each ledger variant writes its own file, row construction included: the floor builds its positional
 * row from the request's values; Tollgate's builds its `ChargeRecord` as billing settles it (the same
 * fields, the same price snapshot object per model) and hands it to `LedgerWriter.enqueue`, a batch
 * then flushed as the writer's timer would. Not counted: the request summary step before Tollgate's
 * line (it needs a finished request), the balance book's settle and the budgets' alerts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import { LedgerWriter } from '../src/billing/ledger-writer';
import type { Outbox } from '../src/outbox/outbox';
import { acquireOutbox, releaseOutbox } from '../src/outbox/shared-outboxes';
import { snapshotOf } from '../src/billing/prices';
import { createLogger } from '../src/gateway';
import { newRequestId } from '../src/http/request-id';
import { requestLineLogger } from '../src/http/boundary';
import { requestLogLine } from '../src/metrics/request-log';
import type { RequestSummary } from '../src/metrics/summary';
import { SqliteStore } from '../src/store/sqlite';
import type { ChargeRecord } from '../src/store/store';
import { FloorLedger } from './floor-ledger';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const BATCH = 57;
const ROWS = Math.max(BATCH, Math.round(Number(process.env.BENCH_ROWS ?? 34_200) / BATCH) * BATCH);

/** The bench's priced models: input 3, output 15 per 1M tokens, as nano-units per token. */
const PRICE = { tokens: { inputTokens: 3000n, cacheWriteTokens: 0n, cacheWrite1hTokens: 0n, cacheReadTokens: 0n, outputTokens: 15000n, imageInputTokens: 0n, imageOutputTokens: 0n }, toolCalls: {}, perImage: {} };
const SNAPSHOT = snapshotOf(PRICE);
const SNAPSHOT_TEXT = JSON.stringify(SNAPSHOT);
const USER_AGENT = 'undici';

interface Variant {
  readonly name: string;
  readonly unit: 'row' | 'line';
  /** Writes `count` rows or lines (a multiple of the batch) and resolves when they are written. */
  run(count: number): Promise<void>;
  close(): Promise<void>;
  cpuMicros: number;
  done: number;
}

/** The request's values a charge and a log line are made of: varying, as requests do; Tollgate's time-ordered ids. */
function requestValues(i: number) {
  const inputTokens = 12 + (i % 7);
  const outputTokens = 40 + (i % 13);
  const cost = BigInt(inputTokens) * PRICE.tokens.inputTokens + BigInt(outputTokens) * PRICE.tokens.outputTokens;
  return { requestId: newRequestId(), inputTokens, outputTokens, cost, latencyMs: 2.5 + (i % 5) * 0.1 };
}

interface Ids {
  readonly accountId: string;
  readonly keyId: string;
}

/** A migrated Tollgate store with one account and key: the ids its charges reference. */
async function tollgateStore(file: string): Promise<{ store: SqliteStore; ids: Ids }> {
  const store = new SqliteStore(file);
  await store.migrate();
  const account = await store.createAccount({ name: 'floor', role: 'user' });
  await store.credit({ accountId: account.id, amount: 10n ** 18n, kind: 'admin', actor: 'bench', note: 'bench' });
  const key = await store.createKey({ accountId: account.id, name: null, hash: Buffer.alloc(32, 7), prefix: 'sk-floor', last4: 'abcd', spendLimit: null });
  return { store, ids: { accountId: account.id, keyId: key.id } };
}

function variant(name: string, unit: Variant['unit'], run: Variant['run'], close: Variant['close']): Variant {
  return { name, unit, run, close, cpuMicros: 0, done: 0 };
}

function floorLedgerVariant(name: string, ledger: FloorLedger, ids: Ids, close: () => Promise<void>): Variant {
  let n = 0;
  return variant(
    name,
    'row',
    async (count) => {
      for (let i = 0; i < count; i++) {
        const values = requestValues(n++);
        ledger.add(
          {
            requestId: values.requestId,
            accountId: ids.accountId,
            keyId: ids.keyId,
            model: 'gpt-bench',
            provider: 'bench-openai',
            inputTokens: values.inputTokens,
            outputTokens: values.outputTokens,
            cost: values.cost,
            held: 4_000_000n,
            pricesText: SNAPSHOT_TEXT,
            status: 200,
            latencyMs: values.latencyMs,
            attemptMs: values.latencyMs - 0.4,
            userAgent: USER_AGENT,
          },
          Date.now(),
        );
        if (ledger.queued === BATCH) ledger.write();
      }
      ledger.write();
    },
    async () => {
      ledger.close();
      await close();
    },
  );
}

/** A charge as billing's `chargeOf` builds it for a plain chat request. */
function tollgateCharge(i: number, ids: Ids): ChargeRecord {
  const values = requestValues(i);
  const tokens = { inputTokens: values.inputTokens, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: values.outputTokens, imageInputTokens: 0, imageOutputTokens: 0 };
  const trail = { sessionId: null, userAgent: USER_AGENT, origin: null, requestedModel: null };
  const attemptLog = [{ provider: 'bench-openai', outcome: 'ok', durationMs: values.latencyMs - 0.4 }];
  return {
    requestId: values.requestId,
    clientRequestId: null,
    accountId: ids.accountId,
    keyId: ids.keyId,
    model: 'gpt-bench',
    provider: 'bench-openai',
    endpoint: 'chat',
    ...tokens,
    toolCalls: {},
    cost: values.cost,
    held: 4_000_000n,
    overage: 0n,
    unbilled: 0n,
    prices: SNAPSHOT,
    serviceTier: null,
    longContext: false,
    usageSource: 'upstream',
    status: 200,
    outcome: 'delivered',
    latencyMs: values.latencyMs,
    createdAt: new Date(),
    ...trail,
    servedModel: 'gpt-bench',
    attempts: attemptLog.map((attempt) => ({ provider: attempt.provider, outcome: attempt.outcome, ms: Math.round(attempt.durationMs) })),
    ttfbMs: null,
  };
}

async function tollgateWriterVariant(name: string, file: string, outboxDir: string | null): Promise<Variant> {
  const { store, ids } = await tollgateStore(file);
  const silent = pino({ level: 'silent' });
  const outbox: Outbox | null = outboxDir === null ? null : acquireOutbox(outboxDir, { syncMs: 10, logger: silent });
  // The plugin's defaults, with a batch as large as the floor's; flushed by hand each batch.
  const writer = new LedgerWriter(store, { intervalMs: 10, maxRecords: 1000, outbox: outbox ?? undefined }, silent);
  let n = 0;
  return variant(
    name,
    'row',
    async (count) => {
      for (let i = 0; i < count; i += BATCH) {
        for (let j = 0; j < BATCH; j++) writer.enqueue(tollgateCharge(n++, ids));
        await writer.flush();
      }
      if (outbox !== null) await outbox.synced();
    },
    async () => {
      await writer.close();
      if (outbox !== null) await releaseOutbox(outbox);
      await store.close();
    },
  );
}

/** Resolves once everything the destination was given is in the file. */
function flushed(destination: ReturnType<typeof pino.destination>): Promise<void> {
  return new Promise((resolve, reject) => destination.flush((err?: Error | null) => (err ? reject(err) : resolve())));
}

function logVariant(name: string, destination: ReturnType<typeof pino.destination>, line: (i: number) => void): Variant {
  let n = 0;
  return variant(
    name,
    'line',
    async (count) => {
      for (let i = 0; i < count; i++) line(n++);
      await flushed(destination);
    },
    async () => {
      await flushed(destination);
      destination.end();
    },
  );
}

function plainLogVariant(file: string): Variant {
  const destination = pino.destination({ dest: file, sync: false });
  const logger = pino({}, destination);
  return logVariant('plain pino line (floor)', destination, (i) => {
    const values = requestValues(i);
    logger.info(
      {
        requestId: values.requestId,
        accountId: 'acc_floor',
        keyPrefix: 'sk-floor',
        endpoint: 'chat',
        model: 'gpt-bench',
        provider: 'bench-openai',
        status: 200,
        input: values.inputTokens,
        output: values.outputTokens,
        cost: String(values.cost),
        usageSource: 'upstream',
        durationMs: values.latencyMs,
      },
      'request',
    );
  });
}

function tollgateLogVariant(file: string): Variant {
  const destination = pino.destination({ dest: file, sync: false });
  const lines: Logger = requestLineLogger(createLogger(destination));
  return logVariant("Tollgate's request line (logger + requestLogLine)", destination, (i) => {
    const values = requestValues(i);
    const summary: RequestSummary = {
      requestId: values.requestId,
      clientRequestId: null,
      endpoint: 'chat',
      model: 'gpt-bench',
      stream: false,
      accountId: 'acc_floor',
      keyPrefix: 'sk-floor',
      status: 200,
      errorCode: null,
      outcome: 'delivered',
      provider: 'bench-openai',
      providerProtocol: 'openai',
      attempts: 1,
      attemptLog: [{ provider: 'bench-openai', outcome: 'ok', durationMs: values.latencyMs - 0.4 }],
      upstreamRequestId: null,
      tokens: { inputTokens: values.inputTokens, cacheWriteTokens: 0, cacheWrite1hTokens: 0, cacheReadTokens: 0, outputTokens: values.outputTokens, imageInputTokens: 0, imageOutputTokens: 0 },
      toolCalls: {},
      unpricedTools: [],
      usageSource: 'upstream',
      cost: values.cost,
      overage: 0n,
      unbilled: 0n,
      rateLimited: null,
      durationMs: values.latencyMs,
      ttfbMs: null,
      overheadMs: 0.4,
      settleMs: 0.1,
    };
    lines.info(requestLogLine(summary), 'request');
  });
}

function cpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'tollgate-floor-rows-'));
  const floorIds = { accountId: 'acc_floor', keyId: 'key_floor' };
  const floor = new FloorLedger(path.join(dir, 'floor.db'));
  floor.addAccount(floorIds.accountId);
  // Tollgate's migrations make the file (and the account and key its foreign keys want); the floor's statements write it.
  const migrated = await tollgateStore(path.join(dir, 'schema.db'));
  await migrated.store.close();
  const all: Variant[] = [
    floorLedgerVariant('cheapest ledger row (floor)', floor, floorIds, async () => {}),
    floorLedgerVariant("cheapest ledger row on Tollgate's schema", new FloorLedger(path.join(dir, 'schema.db'), { onTollgateSchema: true }), migrated.ids, async () => {}),
    await tollgateWriterVariant("Tollgate's ledger writer (no outbox)", path.join(dir, 'writer.db'), null),
    await tollgateWriterVariant("Tollgate's ledger writer with its outbox", path.join(dir, 'outbox.db'), path.join(dir, 'outbox')),
    plainLogVariant(path.join(dir, 'plain.log')),
    tollgateLogVariant(path.join(dir, 'tollgate.log')),
  ];
  const chosen = new Set((process.env.BENCH_VARIANTS ?? '').split(',').filter((n) => n !== '').map(Number));
  const variants = chosen.size === 0 ? all : all.filter((_, i) => chosen.has(i + 1));
  try {
    // Warm-up: the JIT, the prepared statements, the files' first pages.
    for (const v of variants) await v.run(BATCH * 50);
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < variants.length; i++) {
        const v = variants[(round + i) % variants.length];
        const before = cpuMicros();
        await v.run(ROWS);
        v.cpuMicros += cpuMicros() - before;
        v.done += ROWS;
      }
    }
    const ledgerFloor = all[0];
    const logFloor = all[4];
    const perUnit = (v: Variant) => v.cpuMicros / v.done;
    console.log(`ledger rows and log lines alone, one process, ${ROUNDS} rounds of ${ROWS.toLocaleString('en-US')} per variant, batches of ${BATCH}, taking turns\n`);
    console.log('| write | CPU µs per row or line | × the cheapest | above the cheapest, µs |');
    console.log('|---|---:|---:|---:|');
    for (const v of variants) {
      const base = v.unit === 'row' ? ledgerFloor : logFloor;
      const compared = base.done === 0 ? '| – | – |' : `| ${(perUnit(v) / perUnit(base)).toFixed(2)} | ${(perUnit(v) - perUnit(base)).toFixed(1)} |`;
      console.log(`| ${v.name} | ${perUnit(v).toFixed(1)} ${compared}`);
    }
  } finally {
    for (const v of all) await v.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
