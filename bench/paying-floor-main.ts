/**
 * The floor of a *paying* gateway: the bare proxy (bench/bare-proxy-main.ts) plus only the work no
 * gateway that bills can skip, each done the cheapest way there is, with none of Tollgate's code
 * between them. It measures what the issue's "≤ 2 × the bare proxy" target leaves room for.
 *
 * Per request: the key looked up in a Map (Tollgate's cache hit), the body parsed as JSON (the model
 * and the output limit decide the hold), a hold against an in-memory balance, the upstream call, the
 * reply parsed as JSON for its usage, the cost computed in nano-units, the charge written to a SQLite
 * ledger the cheapest way (bench/floor-ledger.ts: Tollgate's columns, primary key and the two spend
 * indexes, batched every 10 ms in one transaction with one balance UPDATE, as billing batches), one
 * counter and one histogram observation, and one plain JSON log line through pino's asynchronous
 * destination. No validation, rate limits, failover, breakers, timeouts, headers or
 * error handling: a gateway cannot ship without them, so the real cost of a paying request is above this.
 *
 *   node paying-floor-main.js <upstream-url> <sqlite-file> [--without=ledger,log]     prints {"url": …}
 *
 * `--without` leaves parts out, to attribute the floor's cost to them (bench/floor.ts).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { Counter, Histogram, Registry } from 'prom-client';
import { Pool } from 'undici';
import { newRequestId } from '../src/http/request-id';
import { FloorLedger } from './floor-ledger';

const NANO = 1_000_000_000n;
/** Per 1M tokens, as the bench's priced models: input 3, output 15. */
const INPUT_PRICE = 3n * NANO;
const OUTPUT_PRICE = 15n * NANO;
/** The price snapshot each charge records, as JSON text: one text per model, made once. */
const PRICES_TEXT = JSON.stringify({ tokens: { inputTokens: '3000', cacheWriteTokens: '0', cacheWrite1hTokens: '0', cacheReadTokens: '0', outputTokens: '15000' }, tool_calls: {} });

async function main(upstreamUrl: string, file: string, without: ReadonlySet<string>): Promise<void> {
  const ledger = new FloorLedger(file);
  ledger.addAccount('acc_floor');
  const keys = new Map([['sk-floor-key', { accountId: 'acc_floor', keyId: 'key_floor', prefix: 'sk-floor' }]]);
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

  setInterval(() => ledger.write(), 10).unref();

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
      const held = (BigInt(raw.length) * INPUT_PRICE + BigInt(body.max_tokens ?? 4096) * OUTPUT_PRICE) / 1_000_000n;
      if (balance < held) {
        res.writeHead(402).end();
        return;
      }
      balance -= held;
      const requestId = newRequestId();
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
            ledger.add(
              {
                requestId,
                accountId: who.accountId,
                keyId: who.keyId,
                model: body.model,
                provider: 'bench-openai',
                inputTokens: usage.prompt_tokens,
                outputTokens: usage.completion_tokens,
                cost,
                held,
                pricesText: PRICES_TEXT,
                status: upstream.statusCode,
                latencyMs,
                attemptMs: latencyMs,
                userAgent: req.headers['user-agent'] ?? null,
              },
              Date.now(),
            );
          requests.inc();
          latency.observe(latencyMs / 1000);
          // The request line's dozen fields, as a plain object.
          if (!without.has('log'))
            logger.info(
              {
                requestId,
                accountId: who.accountId,
                keyPrefix: who.prefix,
                endpoint: 'chat',
                model: body.model,
                provider: 'bench-openai',
                status: upstream.statusCode,
                input: usage.prompt_tokens,
                output: usage.completion_tokens,
                cost: String(cost),
                usageSource: 'upstream',
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
