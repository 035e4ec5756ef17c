/**
 * What the ledger outbox costs and how much a kill -9 can lose with it:
 * - the append on the request path (encode a charge into the shared ring): µs per append, and bytes
 *   per charge on disk;
 * - a steady 3,000 charges a second for STEADY_SECONDS, drained as a ledger writer would: CPU per
 *   charge of the whole process (the syncing thread's writes and fdatasyncs included) against the same
 *   loop without an outbox, fdatasync calls per second and how long a group's write and sync take, and
 *   the loss window: for every charge, how long after its append it was on disk (what a kill -9 at the
 *   worst moment loses is what was appended within that time). Run idle, then under load: the request
 *   thread blocked BLOCK_MS out of every BLOCK_EVERY_MS (long synchronous work: an SQLite commit, a GC
 *   pause) with BURNERS processes spinning on the other cores;
 * - the heap a queued charge holds while the store is away.
 * Prints figures; asserts nothing.
 *
 *   npm run build && node --expose-gc dist/bench/outbox.js      (OUTBOX_DIR=… to measure another disk)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import pino from 'pino';
import { LedgerWriter } from '../src/billing/ledger-writer';
import { Outbox, type OutboxEntry } from '../src/outbox/outbox';
import type { ChargePrices, ChargeRecord, Store } from '../src/store/store';

const APPENDS = Number(process.env.APPENDS ?? 50_000);
const RATE = Number(process.env.RATE ?? 3000);
const STEADY_SECONDS = Number(process.env.STEADY_SECONDS ?? 10);
const QUEUED = Number(process.env.QUEUED ?? 100_000);
const BLOCK_MS = Number(process.env.BLOCK_MS ?? 30);
const BLOCK_EVERY_MS = Number(process.env.BLOCK_EVERY_MS ?? 100);
const BURNERS = Number(process.env.BURNERS ?? 2);
const SYNC_MS = 10;
const silent = pino({ level: 'silent' });

/** One price table's snapshot, shared by its charges as billing shares it. */
const PRICES: ChargePrices = {
  tokens: { inputTokens: '3000000000', cacheWriteTokens: '3750000000', cacheWrite1hTokens: '6000000000', cacheReadTokens: '300000000', outputTokens: '15000000000', imageInputTokens: '0', imageOutputTokens: '0' },
  tool_calls: {},
};

/** A charge as billing makes one: every column filled as a priced chat request fills it. */
function charge(index: number): ChargeRecord {
  return {
    requestId: `req_${index.toString(36).padStart(24, '0')}`,
    clientRequestId: null,
    accountId: 'acc_01hx3k5y7z9a1b2c3d4e5f6g7h',
    keyId: 'key_01hx3k5y7z9a1b2c3d4e5f6g7h',
    model: 'claude-sonnet-5',
    provider: 'anthropic',
    endpoint: 'anthropic-messages',
    inputTokens: 1523,
    cacheWriteTokens: 0,
    cacheWrite1hTokens: 0,
    cacheReadTokens: 12_800,
    outputTokens: 412,
    imageInputTokens: 0,
    imageOutputTokens: 0,
    toolCalls: {},
    cost: 10_617_000n,
    held: 48_000_000n,
    overage: 0n,
    unbilled: 0n,
    prices: PRICES,
    usageSource: 'upstream',
    status: 200,
    outcome: 'delivered',
    latencyMs: 812.4,
    createdAt: new Date(),
    serviceTier: null,
    longContext: false,
    sessionId: null,
    requestedModel: null,
    servedModel: 'claude-sonnet-5-20260101',
    attempts: [{ provider: 'anthropic', outcome: 'ok', ms: 810 }],
    ttfbMs: null,
    userAgent: 'openai-python/1.50',
    origin: null,
  };
}

function quantile(sorted: ArrayLike<number>, q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];
}

function cpuMicros(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

async function appendCost(dir: string): Promise<void> {
  const outbox = Outbox.open(path.join(dir, 'append'), { syncMs: SYNC_MS, logger: silent });
  await outbox.started();
  const rows = Array.from({ length: APPENDS }, (_, i) => charge(i));
  const samples = new Float64Array(APPENDS);
  let bytes = 0;
  for (let i = 0; i < APPENDS; i++) {
    const start = process.hrtime.bigint();
    const entry = outbox.appendCharge(rows[i], 'b1e5f0c2-7d7e-4f6a-9d0e-2f1c3b4a5d6e');
    samples[i] = Number(process.hrtime.bigint() - start) / 1000;
    bytes += entry.bytes;
    // Let the group syncs run as they would between requests.
    if (i % 100 === 99) await new Promise((resolve) => setImmediate(resolve));
  }
  await outbox.synced();
  await outbox.close();
  samples.sort();
  console.log(`append (encode + copy into the ring), ${APPENDS.toLocaleString('en-US')} charges: median ${quantile(samples, 0.5).toFixed(2)} µs, p99 ${quantile(samples, 0.99).toFixed(2)} µs`);
  console.log(`bytes per charge on disk: ${Math.round(bytes / APPENDS)}`);
}

interface Steady {
  readonly cpuMicros: number;
  readonly seconds: number;
}

/**
 * RATE charges a second for STEADY_SECONDS, paced by the clock, each drained 5 ms later as the ledger
 * writer would; with `outbox` null the same loop without one (what the loop itself costs).
 */
async function steadyLoop(outbox: Outbox | null, appended: (index: number) => void, block: boolean): Promise<Steady> {
  const total = RATE * STEADY_SECONDS;
  const cpuBefore = cpuMicros();
  const started = performance.now();
  let next = 0;
  let nextBlock = started + BLOCK_EVERY_MS;
  let drainable: OutboxEntry[] = [];
  const drainer = setInterval(() => {
    if (outbox !== null && drainable.length > 0) outbox.drained(drainable);
    drainable = [];
  }, 5);
  while (next < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * RATE));
    for (; next < due; next++) {
      const made = charge(next);
      if (outbox !== null) {
        drainable.push(outbox.appendCharge(made, null));
        appended(next);
      }
    }
    if (block && performance.now() >= nextBlock) {
      // Long synchronous work on the request thread: nothing else runs on it meanwhile.
      const until = performance.now() + BLOCK_MS;
      while (performance.now() < until);
      nextBlock += BLOCK_EVERY_MS;
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  if (outbox !== null) await outbox.synced();
  clearInterval(drainer);
  return { cpuMicros: cpuMicros() - cpuBefore, seconds: (performance.now() - started) / 1000 };
}

function startBurners(count: number): ChildProcess[] {
  return Array.from({ length: count }, () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
}

interface Condition {
  readonly name: string;
  readonly block: boolean;
  readonly burners: number;
}

/**
 * One condition: the loop alone, the loop with an outbox as the gateway runs it (CPU, fdatasync/s),
 * then again with a message after every group (which the gateway does not ask for) to time each
 * charge's way to disk.
 */
async function steadyRate(dir: string, condition: Condition): Promise<void> {
  const burners = startBurners(condition.burners);
  try {
    const total = RATE * STEADY_SECONDS;
    const baseline = await steadyLoop(null, () => undefined, condition.block);
    const plain = Outbox.open(path.join(dir, `cpu-${condition.burners}-${condition.block}`), { syncMs: SYNC_MS, logger: silent });
    // A gateway opens its outbox at start, long before the first charge: the thread's start is not measured.
    await plain.started();
    const measured = await steadyLoop(plain, () => undefined, condition.block);
    const fdatasyncs = plain.fdatasyncCalls;
    await plain.close();
    const perCharge = (measured.cpuMicros - baseline.cpuMicros) / total;
    console.log(
      `${condition.name}: ${RATE.toLocaleString('en-US')} charges/s for ${STEADY_SECONDS} s: outbox CPU ${perCharge.toFixed(2)} µs per charge ` +
        `(${(measured.cpuMicros / total).toFixed(2)} with the loop, ${(baseline.cpuMicros / total).toFixed(2)} without the outbox), ` +
        `${(fdatasyncs / measured.seconds).toFixed(0)} fdatasync/s`,
    );

    const appendedAt = new Float64Array(total);
    const endsAt = new Float64Array(total);
    const windows = new Float64Array(total);
    let synced = 0;
    const groupMs: number[] = [];
    const lateMs: number[] = [];
    const outbox: Outbox = Outbox.open(path.join(dir, `window-${condition.burners}-${condition.block}`), {
      syncMs: SYNC_MS,
      logger: silent,
      onSynced: (durable, at, ms, _calls, late) => {
        groupMs.push(ms);
        lateMs.push(late);
        for (; synced < total && endsAt[synced] !== 0 && endsAt[synced] <= durable; synced++) windows[synced] = at - appendedAt[synced];
      },
    });
    await outbox.started();
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    await steadyLoop(
      outbox,
      (index) => {
        appendedAt[index] = epochMs();
        endsAt[index] = outbox.appendedBytes;
      },
      condition.block,
    );
    delay.disable();
    await outbox.close();
    const sorted = windows.subarray(0, synced).sort();
    groupMs.sort((a, b) => a - b);
    lateMs.sort((a, b) => a - b);
    const figures = (values: ArrayLike<number>): string =>
      `median ${quantile(values, 0.5).toFixed(2)}, p99 ${quantile(values, 0.99).toFixed(2)}, max ${quantile(values, 1).toFixed(2)} ms`;
    console.log(
      `${condition.name}: loss window (append → on disk) ${figures(sorted)}, p99.9 ${quantile(sorted, 0.999).toFixed(2)} ms over ${synced.toLocaleString('en-US')} charges; ` +
        `per group: write + fdatasync ${figures(groupMs)}; the syncer woke late by ${figures(lateMs)}; ` +
        `request thread's event-loop delay p99 ${(delay.percentile(99) / 1e6).toFixed(2)}, max ${(delay.max / 1e6).toFixed(2)} ms`,
    );
  } finally {
    for (const burner of burners) burner.kill();
  }
}

/** Heap per charge queued in the ledger writer while the store is away (needs --expose-gc). */
async function queuedHeap(dir: string): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) {
    console.log('heap per queued charge: run with node --expose-gc to measure');
    return;
  }
  const away = { recordCharges: () => Promise.reject(new Error('away')) } as unknown as Store;
  const outbox = Outbox.open(path.join(dir, 'heap'), { syncMs: SYNC_MS, logger: silent });
  const writer = new LedgerWriter(away, { intervalMs: 60_000, maxRecords: 500, outbox }, silent);
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < QUEUED; i++) {
    writer.enqueue(charge(i));
    if (i % 1000 === 999) await outbox.synced();
  }
  await outbox.synced();
  gc();
  const after = process.memoryUsage().heapUsed;
  console.log(`heap per charge queued while the store is away: ${Math.round((after - before) / QUEUED)} bytes (${QUEUED.toLocaleString('en-US')} queued)`);
  await outbox.close();
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(process.env.OUTBOX_DIR ?? tmpdir(), 'tollgate-bench-outbox-'));
  try {
    await appendCost(dir);
    await steadyRate(dir, { name: 'idle', block: false, burners: 0 });
    await steadyRate(dir, { name: `request thread blocked ${BLOCK_MS} ms of every ${BLOCK_EVERY_MS}`, block: true, burners: 0 });
    await steadyRate(dir, { name: `blocked, and ${BURNERS} processes spinning`, block: true, burners: BURNERS });
    await queuedHeap(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  process.exit(0);
}

void main();
