/**
 * What the ledger outbox costs: the append on the request path (encode and buffer a charge), the
 * group syncs at a steady 3,000 charges a second (fdatasync calls per second, how long each takes,
 * how long the event loop waited meanwhile), the bytes a charge takes on disk, and the heap a queued
 * charge holds while the store is away. Prints figures; asserts nothing.
 *
 *   npm run build && node --expose-gc dist/bench/outbox.js      (OUTBOX_DIR=… to measure another disk)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import pino from 'pino';
import { LedgerWriter } from '../src/billing/ledger-writer';
import { Outbox } from '../src/billing/outbox';
import type { ChargeRecord, Store } from '../src/store/store';

const APPENDS = Number(process.env.APPENDS ?? 50_000);
const RATE = Number(process.env.RATE ?? 3000);
const STEADY_SECONDS = Number(process.env.STEADY_SECONDS ?? 10);
const QUEUED = Number(process.env.QUEUED ?? 100_000);
const silent = pino({ level: 'silent' });

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
    toolCalls: {},
    cost: 10_617_000n,
    held: 48_000_000n,
    overage: 0n,
    unbilled: 0n,
    prices: { tokens: { inputTokens: '3000000000', cacheWriteTokens: '3750000000', cacheWrite1hTokens: '6000000000', cacheReadTokens: '300000000', outputTokens: '15000000000' }, tool_calls: {} },
    usageSource: 'upstream',
    status: 200,
    outcome: 'delivered',
    latencyMs: 812.4,
    createdAt: new Date(),
    serviceTier: null,
    longContext: false,
  };
}

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))];
}

/** Counts and times every fdatasync the outbox makes (all go through FileHandle#datasync). */
async function watchDatasync(dir: string): Promise<{ calls: number; ms: number[] }> {
  const probe = await open(path.join(dir, 'probe'), 'w');
  const proto = Object.getPrototypeOf(probe) as { datasync: () => Promise<void> };
  await probe.close();
  const seen = { calls: 0, ms: [] as number[] };
  const original = proto.datasync;
  proto.datasync = async function (this: unknown) {
    const start = performance.now();
    try {
      return await original.call(this);
    } finally {
      seen.calls += 1;
      seen.ms.push(performance.now() - start);
    }
  };
  return seen;
}

async function appendCost(dir: string): Promise<void> {
  const outbox = Outbox.open(path.join(dir, 'append'), { syncMs: 10, logger: silent });
  const rows = Array.from({ length: APPENDS }, (_, i) => charge(i));
  const samples: number[] = [];
  let bytes = 0;
  for (let i = 0; i < APPENDS; i++) {
    const start = process.hrtime.bigint();
    const entry = outbox.append({ kind: 'charge', id: rows[i].requestId, instance: 'b1e5f0c2-7d7e-4f6a-9d0e-2f1c3b4a5d6e', row: rows[i] });
    samples.push(Number(process.hrtime.bigint() - start) / 1000);
    bytes += entry.bytes;
    // Let the group syncs run as they would between requests.
    if (i % 100 === 99) await new Promise((resolve) => setImmediate(resolve));
  }
  await outbox.synced();
  await outbox.close();
  samples.sort((a, b) => a - b);
  console.log(`append (encode + buffer), ${APPENDS.toLocaleString('en-US')} charges: median ${quantile(samples, 0.5).toFixed(1)} µs, p99 ${quantile(samples, 0.99).toFixed(1)} µs`);
  console.log(`bytes per charge on disk: ${Math.round(bytes / APPENDS)}`);
}

async function steadyRate(dir: string, seen: { calls: number; ms: number[] }): Promise<void> {
  const outbox = Outbox.open(path.join(dir, 'steady'), { syncMs: 10, logger: silent });
  const delay = monitorEventLoopDelay({ resolution: 1 });
  seen.calls = 0;
  seen.ms.length = 0;
  delay.enable();
  const total = RATE * STEADY_SECONDS;
  const started = performance.now();
  let appended = 0;
  while (appended < total) {
    // Paced by the clock: whatever is due by now is appended, then the loop yields for 1 ms.
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * RATE));
    for (; appended < due; appended++) {
      const entry = outbox.append({ kind: 'charge', id: `s${appended}`, instance: null, row: charge(appended) });
      // The store keeps up: each record is drained a little later, as the ledger writer would.
      setTimeout(() => outbox.drained([entry]), 5).unref();
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await outbox.synced();
  const seconds = (performance.now() - started) / 1000;
  delay.disable();
  await outbox.close();
  const ms = [...seen.ms].sort((a, b) => a - b);
  console.log(
    `${RATE.toLocaleString('en-US')} charges/s for ${STEADY_SECONDS} s: ${(seen.calls / seconds).toFixed(0)} fdatasync/s ` +
      `(each median ${quantile(ms, 0.5).toFixed(2)} ms, p99 ${quantile(ms, 0.99).toFixed(2)} ms, max ${ms.at(-1)!.toFixed(2)} ms); ` +
      `event-loop delay p99 ${(delay.percentile(99) / 1e6).toFixed(2)} ms, max ${(delay.max / 1e6).toFixed(2)} ms`,
  );
}

/** Heap per charge queued in the ledger writer while the store is away (needs --expose-gc). */
async function queuedHeap(dir: string): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) {
    console.log('heap per queued charge: run with node --expose-gc to measure');
    return;
  }
  const away = { recordCharges: () => Promise.reject(new Error('away')) } as unknown as Store;
  const outbox = Outbox.open(path.join(dir, 'heap'), { syncMs: 10, logger: silent });
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
    const seen = await watchDatasync(dir);
    await appendCost(dir);
    await steadyRate(dir, seen);
    await queuedHeap(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  process.exit(0);
}

void main();
