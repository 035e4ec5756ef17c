/**
 * The floor of a *paying* gateway: the bare proxy (bench/bare-proxy-main.ts) plus only the work no
 * gateway that bills can skip, each done the cheapest way there is, with none of Tollgate's code
 * between them. It measures what the issue's "≤ 2 × the bare proxy" target leaves room for.
 *
 * Per request: the key looked up in a Map (Tollgate's cache hit), the body parsed as JSON (the model
 * and the output limit decide the hold), a hold against an in-memory balance, the upstream call, the
 * reply parsed as JSON for its usage, the cost computed in nano-units, the charge written to a SQLite
 * ledger with Tollgate's own schema (Tollgate's store, batched every 10 ms in one transaction, as
 * billing does), one counter and one histogram observation, and one JSON log line through pino's
 * asynchronous destination. No validation, rate limits, failover, breakers, timeouts, headers or
 * error handling: a gateway cannot ship without them, so the real cost of a paying request is above this.
 *
 *   node paying-floor-main.js <upstream-url> <sqlite-file> [--without=ledger,log]     prints {"url": …}
 *
 * `--without` leaves parts out, to attribute the floor's cost to them (bench/floor.ts).
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { Counter, Histogram, Registry } from 'prom-client';
import { Pool } from 'undici';
import { SqliteStore } from '../src/store/sqlite';
import type { ChargeRecord } from '../src/store/store';

const NANO = 1_000_000_000n;
/** Per 1M tokens, as the bench's priced models: input 3, output 15. */
const INPUT_PRICE = 3n * NANO;
const OUTPUT_PRICE = 15n * NANO;

async function main(upstreamUrl: string, file: string, without: ReadonlySet<string>): Promise<void> {
  const store = new SqliteStore(file);
  await store.migrate();
  const account = await store.createAccount({ name: 'floor', role: 'user' });
  const key = await store.createKey({
    accountId: account.id,
    name: null,
    hash: Buffer.alloc(32, 7),
    prefix: 'sk-floor',
    last4: 'abcd',
    spendLimit: null,
  });
  const keys = new Map([['sk-floor-key', { accountId: account.id, keyId: key.id }]]);
  let balance = 10n ** 18n;

  const pool = new Pool(upstreamUrl, {
    connections: 128,
    pipelining: 1,
    keepAliveTimeout: 30_000,
  });
  const logger = pino(
    { base: { pid: process.pid } },
    pino.destination({
      dest: process.env.BENCH_LOG || '/dev/null',
      sync: false,
    }),
  );
  const registry = new Registry();
  const requests = new Counter({
    name: 'requests_total',
    help: 'requests',
    labelNames: ['model', 'status'],
    registers: [registry],
  }).labels('gpt-bench', '200');
  const latency = new Histogram({
    name: 'duration_seconds',
    help: 'latency',
    labelNames: ['model'],
    registers: [registry],
  }).labels('gpt-bench');

  let queue: ChargeRecord[] = [];
  setInterval(() => {
    if (queue.length === 0) return;
    const batch = queue;
    queue = [];
    void store.recordCharges(batch);
  }, 10).unref();

  const server = createServer((req, res) => {
    const startedAt = performance.now();
    const who = keys.get((req.headers.authorization ?? '').slice(7));
    if (who === undefined) {
      res.writeHead(401).end();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      const body = JSON.parse(raw.toString('utf8')) as {
        model: string;
        max_tokens?: number;
      };
      const held = (BigInt(Math.ceil(raw.length / 3)) * INPUT_PRICE + BigInt(body.max_tokens ?? 4096) * OUTPUT_PRICE) / 1_000_000n;
      if (balance < held) {
        res.writeHead(402).end();
        return;
      }
      balance -= held;
      const requestId = `req_${randomUUID().replaceAll('-', '')}`;
      pool
        .request({
          method: 'POST',
          path: req.url ?? '/',
          headers: { 'content-type': 'application/json' },
          body: raw,
        })
        .then(async (upstream) => {
          const reply = Buffer.from(await upstream.body.arrayBuffer());
          res.writeHead(upstream.statusCode, {
            'content-type': 'application/json',
            'content-length': reply.length,
            'x-request-id': requestId,
          });
          res.end(reply);
          const usage = (
            JSON.parse(reply.toString('utf8')) as {
              usage: { prompt_tokens: number; completion_tokens: number };
            }
          ).usage;
          const cost = (BigInt(usage.prompt_tokens) * INPUT_PRICE + BigInt(usage.completion_tokens) * OUTPUT_PRICE) / 1_000_000n;
          balance += held - cost;
          const latencyMs = performance.now() - startedAt;
          if (!without.has('ledger'))
            queue.push({
              requestId,
              clientRequestId: null,
              ...who,
              model: body.model,
              provider: 'bench-openai',
              endpoint: 'chat',
              inputTokens: usage.prompt_tokens,
              cacheWriteTokens: 0,
              cacheWrite1hTokens: 0,
              cacheReadTokens: 0,
              outputTokens: usage.completion_tokens,
              toolCalls: {},
              cost,
              held,
              overage: 0n,
              unbilled: 0n,
              prices: null,
              serviceTier: null,
              longContext: false,
              usageSource: 'upstream',
              status: upstream.statusCode,
              outcome: 'delivered',
              latencyMs,
              createdAt: new Date(),
            });
          requests.inc();
          latency.observe(latencyMs / 1000);
          if (!without.has('log'))
            logger.info(
              {
                requestId,
                accountId: who.accountId,
                model: body.model,
                status: upstream.statusCode,
                input: usage.prompt_tokens,
                output: usage.completion_tokens,
                cost: String(cost),
                durationMs: latencyMs,
              },
              'request',
            );
        })
        .catch(() => res.destroy());
    });
  });
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, key: 'sk-floor-key' })}\n`);
  });
}

const without = new Set((process.argv.find((arg) => arg.startsWith('--without=')) ?? '--without=').slice('--without='.length).split(','));
main(process.argv[2], process.argv[3], without).catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
