/**
 * Which index each usage summary reads in PostgreSQL, by EXPLAIN, on a vacuumed and analysed ledger
 * (as autovacuum keeps a long-running one): every summary by model, key, day, account or provider,
 * across accounts or for one, the operator's with its upstream cost and margin sums too, is an
 * index-only scan of a covering index and never reads the table. Runs in a database of its own;
 * skipped, saying so, without a reachable PostgreSQL.
 */
import { expect } from 'chai';
import { Client } from 'pg';
import { applyPostgresMigrations } from '../../src/store/migrations/postgres';
import { postgresSummarySql } from '../../src/store/postgres-usage';
import type { UsageGroup } from '../../src/store/store';
import { createTestDatabase, postgresProblem, type TestDatabase } from '../helpers/services';

const DAY_MS = 86_400_000;
const UNTIL = Date.UTC(2026, 10, 27);
const ROWS = 20_000;

/** A ledger of ROWS charges over 90 days (50 accounts, 8 models, half in sessions), vacuumed and analysed. */
async function seed(db: Client): Promise<void> {
  const start = (UNTIL - 90 * DAY_MS) / 1000;
  await db.query(`INSERT INTO accounts (id, name, role, created_at) SELECT 'acc_' || i, 'account-' || i, 'user', to_timestamp(${start}) FROM generate_series(0, 49) AS i`);
  await db.query(`INSERT INTO api_keys (id, account_id, hash, prefix, last4, created_at)
                  SELECT 'key_' || (i / 3) || '_' || (i % 3), 'acc_' || (i / 3), decode(md5(i::text) || md5('k' || i), 'hex'), 'sk-test', 'xxxx', to_timestamp(${start})
                    FROM generate_series(0, 149) AS i`);
  await db.query(`INSERT INTO charges (request_id, account_id, key_id, model, provider, endpoint, input_tokens, cache_write_tokens,
                                       cache_write_1h_tokens, cache_read_tokens, output_tokens, cost, usage_source, status, outcome,
                                       latency_ms, created_at, session_id, upstream_cost)
                  SELECT 'req_' || i, 'acc_' || (i % 50), 'key_' || (i % 50) || '_' || (i % 3), 'model-' || (i % 8), 'provider-' || (i % 3),
                         'chat', 1000, 0, 0, 300, 200, 1000000, 'upstream', 200, 'delivered', 800,
                         to_timestamp(${start} + i * ${(90 * DAY_MS) / ROWS / 1000}), CASE WHEN i % 2 = 0 THEN 'sess-' || (i / 200) ELSE NULL END,
                         CASE WHEN i % 10 = 0 THEN NULL ELSE 700000 END
                    FROM generate_series(0, ${ROWS - 1}) AS i`);
  await db.query('VACUUM ANALYZE charges');
}

/** The plan's nodes that read `charges`: "<node type> on <index or table>". */
async function scansOf(db: Client, accountId: string | null, groupBy: UsageGroup, upstreamCost: boolean): Promise<string[]> {
  const { sql, values } = postgresSummarySql({ accountId, groupBy, upstreamCost, since: new Date(UNTIL - 30 * DAY_MS), until: new Date(UNTIL), limit: 100, offset: 0 });
  const { rows } = await db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${sql}`, values);
  const scans: string[] = [];
  interface PlanNode {
    readonly 'Node Type': string;
    readonly 'Relation Name'?: string;
    readonly 'Index Name'?: string;
    readonly Plans?: readonly PlanNode[];
  }
  const visit = (node: PlanNode): void => {
    if (node['Relation Name'] === 'charges') scans.push(`${node['Node Type']} on ${node['Index Name'] ?? 'the table'}`);
    for (const child of node.Plans ?? []) visit(child);
  };
  visit((rows[0]['QUERY PLAN'] as { Plan: PlanNode }[])[0].Plan);
  return scans;
}

describe('store/postgres: the indexes usage summaries read', function () {
  this.timeout(60_000);
  let database: TestDatabase | null = null;
  let db: Client | null = null;

  before(async function () {
    const problem = await postgresProblem();
    if (problem !== null) {
      console.log(`      skipped: ${problem}`);
      this.skip();
    }
    database = await createTestDatabase();
    db = new Client({ connectionString: database.url });
    await db.connect();
    await applyPostgresMigrations(db);
    await seed(db);
  });

  after(async () => {
    await db?.end();
    await database?.drop();
  });

  const scopes = [
    { accountId: null, groups: ['day', 'model', 'account', 'provider'] },
    { accountId: 'acc_1', groups: ['day', 'model', 'key', 'account', 'provider'] },
  ] as const;
  for (const { accountId, groups } of scopes) {
    for (const groupBy of groups) {
      for (const upstreamCost of [false, true]) {
        const whose = upstreamCost ? ", the operator's, with upstream cost" : '';
        it(`${accountId === null ? 'every account' : 'one account'} by ${groupBy}${whose}: an index-only scan, never the table`, async () => {
          const scans = await scansOf(db!, accountId, groupBy, upstreamCost);
          expect(scans).to.have.length.greaterThan(0);
          for (const scan of scans) expect(scan).to.match(/^Index Only Scan on charges_(time|account)_totals$/);
        });
      }
    }
  }
});
