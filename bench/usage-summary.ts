/**
 * How fast the usage summaries answer over a large ledger: seeds CHARGES charges (1,000,000 by default)
 * over 90 days into a fresh SQLite file and a fresh PostgreSQL database, then times each summary the
 * console asks for. Prints figures (median of RUNS runs, milliseconds); asserts nothing. PostgreSQL is
 * skipped with a line saying so when it is not reachable.
 *
 *   npm run build && node dist/bench/usage-summary.js          (CHARGES=… RUNS=… to change them;
 *                                                              SKIP_SQLITE=1 or SKIP_POSTGRES=1 for one store;
 *                                                              ONLY=… for the cases whose label has it)
 *
 * The ledger: 100 accounts of 3 keys each, account 0 making a fifth of all requests (the heavy user),
 * 8 models, 3 providers, half the requests in sessions of 100, one in 50 a 502, one in 10 with no
 * upstream cost. The summaries across accounts ask for the upstream sums, as the operator's console does.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { openSqlite } from '../src/store/sqlite-driver';
import { openStore } from '../src/store/open';
import type { Store, UsageGroup } from '../src/store/store';

const CHARGES = Number(process.env.CHARGES ?? 1_000_000);
const RUNS = Number(process.env.RUNS ?? 5);
const PG_ADMIN_URL = process.env.TOLLGATE_BENCH_PG_URL ?? `postgres://${encodeURIComponent(userInfo().username)}@127.0.0.1:5432/test`;
const DAY_MS = 86_400_000;
const SPAN_DAYS = 90;
const ACCOUNTS = 100;
const END = Date.UTC(2026, 10, 27);
const START = END - SPAN_DAYS * DAY_MS;
const STEP_MS = (SPAN_DAYS * DAY_MS) / CHARGES;

/** The charge number `i` as SQL expressions over `i` (the same text in both dialects). */
const ACCOUNT_OF = `(CASE WHEN i % 5 = 0 THEN 0 ELSE i % ${ACCOUNTS} END)`;
const COLUMNS = 'request_id, account_id, key_id, model, provider, endpoint, input_tokens, cache_write_tokens, cache_write_1h_tokens, cache_read_tokens, output_tokens, cost, usage_source, status, outcome, latency_ms, created_at, session_id, upstream_cost';
function valuesOf(concat: (...parts: string[]) => string, createdAt: string): string {
  return [
    concat("'req_'", 'i'),
    concat("'acc_'", ACCOUNT_OF),
    concat("'key_'", ACCOUNT_OF, "'_'", 'i % 3'),
    concat("'model-'", 'i % 8'),
    concat("'provider-'", 'i % 3'),
    "'chat'",
    '1000 + i % 500', 'i % 7 * 10', '0', 'i % 4 * 300', '200 + i % 300',
    '1000000 + i % 777 * 1000',
    "'upstream'",
    'CASE WHEN i % 50 = 0 THEN 502 ELSE 200 END',
    "'delivered'",
    '800 + i % 1000',
    createdAt,
    `CASE WHEN i % 2 = 0 THEN ${concat("'sess-'", 'i / 200')} ELSE NULL END`,
    // What the route cost the operator: unknown (a route with no cost) for one charge in ten.
    'CASE WHEN i % 10 = 0 THEN NULL ELSE 700000 + i % 555 * 1000 END',
  ].join(', ');
}

interface Case {
  readonly label: string;
  run(store: Store): Promise<unknown>;
}

/** Across accounts it is the operator asking, as the admin console does: with the upstream sums. */
function summary(label: string, accountId: string | null, groupBy: UsageGroup, days: number, limit = 100): Case {
  const upstreamCost = accountId === null;
  return { label, run: (store) => store.usageSummary({ accountId, groupBy, upstreamCost, since: new Date(END - days * DAY_MS), until: new Date(END), limit, offset: 0 }) };
}

const ALL_CASES: readonly Case[] = [
  summary('an account, 30 days, by model', 'acc_1', 'model', 30),
  summary('an account, 30 days, by day', 'acc_1', 'day', 30),
  summary('the heavy account, 30 days, by model', 'acc_0', 'model', 30),
  summary('the heavy account, 30 days, by key', 'acc_0', 'key', 30),
  summary('the heavy account, 30 days, by day', 'acc_0', 'day', 30),
  summary('the heavy account, 30 days, by session (50 newest)', 'acc_0', 'session', 30, 50),
  { label: 'the heavy account, one session in full (summary)', run: (store) => store.usageSummary({ accountId: 'acc_0', groupBy: 'session', sessionId: `sess-${Math.floor((CHARGES - 10) / 200)}`, since: new Date(0), until: new Date(END + DAY_MS), limit: 1, offset: 0 }) },
  { label: "the heavy account's keys: last use, today, this month", run: (store) => store.keyActivity('acc_0', new Date(END - DAY_MS), new Date(END - 27 * DAY_MS)) },
  summary('every account, 30 days, by day', null, 'day', 30),
  summary('every account, 30 days, by model', null, 'model', 30),
  summary('every account, 30 days, by account', null, 'account', 30),
  summary('every account, 30 days, by provider', null, 'provider', 30),
  summary('every account, 7 days, by day', null, 'day', 7),
];

/** ONLY=text: the cases whose label contains it (ONLY="every account": the operator's summaries). */
const CASES = ALL_CASES.filter((work) => work.label.includes(process.env.ONLY ?? ''));

async function time(store: Store, work: Case): Promise<number> {
  const samples: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const start = performance.now();
    await work.run(store);
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)];
}

async function measure(store: Store): Promise<number[]> {
  const figures: number[] = [];
  for (const work of CASES) figures.push(await time(store, work));
  return figures;
}

async function sqlite(): Promise<Figures> {
  const folder = mkdtempSync(path.join(tmpdir(), 'tollgate-usage-bench-'));
  const file = path.join(folder, 'ledger.db');
  const store = openStore({ url: `sqlite:${file}` });
  try {
    await store.migrate();
    const started = performance.now();
    const db = openSqlite(file);
    const concat = (...parts: string[]) => parts.map((part) => `(${part})`).join(' || ');
    db.exec('BEGIN');
    db.exec(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${ACCOUNTS - 1})
             INSERT INTO accounts (id, name, role, created_at) SELECT 'acc_' || i, 'account-' || i, 'user', ${START} FROM n`);
    db.exec(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${ACCOUNTS * 3 - 1})
             INSERT INTO api_keys (id, account_id, hash, prefix, last4, created_at)
             SELECT 'key_' || (i / 3) || '_' || (i % 3), 'acc_' || (i / 3), randomblob(32), 'sk-bench', 'xxxx', ${START} FROM n`);
    db.exec(`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${CHARGES - 1})
             INSERT INTO charges (${COLUMNS}) SELECT ${valuesOf(concat, `CAST(${START} + i * ${STEP_MS} AS INTEGER)`)} FROM n`);
    db.exec('COMMIT');
    db.exec('ANALYZE');
    db.close();
    const seedS = (performance.now() - started) / 1000;
    return report('SQLite', { seedS, figures: await measure(store) });
  } finally {
    await store.close();
    rmSync(folder, { recursive: true, force: true });
  }
}

async function postgres(): Promise<Figures | null> {
  const admin = new Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 1000 });
  try {
    await admin.connect();
  } catch {
    return null;
  }
  const name = `tollgate_bench_${randomBytes(4).toString('hex')}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  // A loaded machine's slowest summary may pass the default statement timeout: this measures, it does not enforce.
  const store = openStore({ url: url.toString(), statement_timeout_ms: 120_000 });
  try {
    await store.migrate();
    const started = performance.now();
    const client = new Client({ connectionString: url.toString() });
    await client.connect();
    try {
      const concat = (...parts: string[]) => `concat(${parts.join(', ')})`;
      await client.query(`INSERT INTO accounts (id, name, role, created_at) SELECT 'acc_' || i, 'account-' || i, 'user', to_timestamp(${START / 1000}) FROM generate_series(0, ${ACCOUNTS - 1}) AS i`);
      await client.query(`INSERT INTO api_keys (id, account_id, hash, prefix, last4, created_at)
                          SELECT 'key_' || (i / 3) || '_' || (i % 3), 'acc_' || (i / 3), decode(md5(i::text) || md5('k' || i), 'hex'), 'sk-bench', 'xxxx', to_timestamp(${START / 1000})
                            FROM generate_series(0, ${ACCOUNTS * 3 - 1}) AS i`);
      await client.query(`INSERT INTO charges (${COLUMNS}) SELECT ${valuesOf(concat, `to_timestamp((${START} + i::double precision * ${STEP_MS}) / 1000.0)`)} FROM generate_series(0, ${CHARGES - 1}) AS i`);
      await client.query('VACUUM ANALYZE charges');
    } finally {
      await client.end();
    }
    const seedS = (performance.now() - started) / 1000;
    return report('PostgreSQL', { seedS, figures: await measure(store) });
  } finally {
    await store.close();
    // A connection the store closed may take a moment to leave the server.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await admin.query(`DROP DATABASE IF EXISTS ${name}`).catch((error: unknown) => console.error(`could not drop ${name}: ${(error as Error).message}`));
    await admin.end();
  }
}

interface Figures {
  readonly seedS: number;
  readonly figures: number[];
}

/** Prints one store's table as soon as it is measured, before its database is cleaned up. */
function report(name: string, result: Figures): Figures {
  console.log(`\n${name} (seeded in ${result.seedS.toFixed(1)} s)\n`);
  console.log('| query | ms |');
  console.log('|---|---:|');
  CASES.forEach((work, index) => console.log(`| ${work.label} | ${result.figures[index].toFixed(1)} |`));
  return result;
}

async function main(): Promise<void> {
  console.log(`Usage summaries over ${CHARGES.toLocaleString('en-US')} charges (${SPAN_DAYS} days, ${ACCOUNTS} accounts), median of ${RUNS} runs, ms`);
  if (process.env.SKIP_SQLITE !== '1') await sqlite();
  if (process.env.SKIP_POSTGRES === '1') return;
  if ((await postgres()) === null) console.log(`\nPostgreSQL: skipped, not reachable at ${PG_ADMIN_URL}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
