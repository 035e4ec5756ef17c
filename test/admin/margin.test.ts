/**
 * Margin in the usage summary, on both stores: an administrator reads, by model, provider, account and
 * day, what was charged, what it cost upstream (with how many charges had no known cost) and the
 * margin, charged less cost over the charges of known cost, to the nano-unit; the CSV carries the same
 * columns. An account reading its own usage (summary, requests, one request, CSV) never sees a cost.
 */
import { expect } from 'chai';
import { hashSecret, newManagementToken } from '../../src/admin/secrets';
import { formatUnits, unitsToNano } from '../../src/billing/money';
import type { ChargeRecord } from '../../src/store/store';
import { PLAIN_CHARGE } from '../helpers/charges';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { createTestDatabase, postgresProblem, type TestDatabase } from '../helpers/services';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { ApiClient } from './api-client';
import { addAccount, consoleYaml, PASSWORD, passwordHash } from './fixtures';

/** Fields only the operator may read. */
const OPERATOR_FIELDS = ['upstream_cost', 'uncosted_requests', 'margin'];

interface Seed {
  readonly account: 'una' | 'otto';
  readonly model: string;
  readonly provider: string;
  readonly charged: string;
  /** Null: the route's cost is unknown. */
  readonly cost: string | null;
  readonly daysAgo: number;
}

/** Awkward amounts on purpose, so an off-by-one nano-unit shows; one below cost, one of unknown cost. */
const SEEDS: readonly Seed[] = [
  { account: 'una', model: 'gpt-priced', provider: 'openai', charged: '0.123456789', cost: '0.061728394', daysAgo: 0 },
  { account: 'una', model: 'gpt-priced', provider: 'openai', charged: '0.000000007', cost: '0.000000003', daysAgo: 1 },
  { account: 'una', model: 'claude-priced', provider: 'anthropic', charged: '0.5', cost: null, daysAgo: 1 },
  { account: 'otto', model: 'claude-priced', provider: 'anthropic', charged: '0.02', cost: '0.020000001', daysAgo: 0 },
  { account: 'otto', model: 'gpt-priced', provider: 'openai', charged: '1.000000001', cost: '0.75', daysAgo: 2 },
];

interface Expected {
  charged: bigint;
  cost: bigint;
  costedCharged: bigint;
  uncosted: number;
}

const DAY_MS = 86_400_000;

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`management API: margin in the usage summary (${backend})`, function () {
    this.timeout(30_000);
    let fake: FakeUpstream;
    let tg: TestGateway;
    let database: TestDatabase | null = null;
    let una: ApiClient;
    let admin: ApiClient;
    const accountIds = new Map<string, string>();
    const now = Date.now();
    const dayOf = (seed: Seed) => new Date(now - seed.daysAgo * DAY_MS).toISOString().slice(0, 10);

    /** What each group should read, worked out from the seeds with bigints, apart from the SQL. */
    function expected(group: (seed: Seed) => string): Map<string, Expected> {
      const groups = new Map<string, Expected>();
      for (const seed of SEEDS) {
        const entry = groups.get(group(seed)) ?? { charged: 0n, cost: 0n, costedCharged: 0n, uncosted: 0 };
        entry.charged += unitsToNano(seed.charged);
        if (seed.cost === null) entry.uncosted += 1;
        else {
          entry.cost += unitsToNano(seed.cost);
          entry.costedCharged += unitsToNano(seed.charged);
        }
        groups.set(group(seed), entry);
      }
      return groups;
    }

    before(async function () {
      if (backend === 'postgres') {
        const problem = await postgresProblem();
        if (problem !== null) {
          console.log(`      skipped: ${problem}`);
          this.skip();
        }
        database = await createTestDatabase();
      }
      await passwordHash();
      fake = await startFakeUpstream();
      let yaml = consoleYaml(fake.url);
      if (database !== null) yaml = yaml.replace('store: { url: "sqlite::memory:" }', `store: { url: "${database.url}" }`);
      tg = await startTestGateway({ yaml, storeFromConfig: database !== null });
      for (const name of ['una', 'otto']) accountIds.set(name, (await addAccount(tg.store, name)).id);
      una = await ApiClient.login(tg.url, 'una', PASSWORD);
      const boss = await tg.store.createAccount({ name: 'boss', role: 'admin' });
      const token = newManagementToken();
      await tg.store.createSession({ accountId: boss.id, hash: hashSecret(token), kind: 'token', name: null, expiresAt: null });
      admin = ApiClient.bearer(tg.url, token);
      const keys = new Map<string, string>();
      const otto = await ApiClient.login(tg.url, 'otto', PASSWORD);
      keys.set('una', (await una.createKey({ name: 'una-key' })).id);
      keys.set('otto', (await otto.createKey({ name: 'otto-key' })).id);
      const charges: ChargeRecord[] = SEEDS.map((seed, index) => ({
        ...PLAIN_CHARGE,
        requestId: `req_margin_${index}`,
        accountId: accountIds.get(seed.account)!,
        keyId: keys.get(seed.account)!,
        model: seed.model,
        provider: seed.provider,
        endpoint: 'chat',
        inputTokens: 10,
        cacheWriteTokens: 0,
        cacheWrite1hTokens: 0,
        cacheReadTokens: 0,
        outputTokens: 5,
        imageInputTokens: 0,
        imageOutputTokens: 0,
        images: 0,
        cost: unitsToNano(seed.charged),
        upstreamCost: seed.cost === null ? null : unitsToNano(seed.cost),
        usageSource: 'upstream',
        status: 200,
        outcome: 'delivered',
        latencyMs: 100,
        createdAt: new Date(now - seed.daysAgo * DAY_MS),
      }));
      await tg.store.recordCharges(charges);
    });

    after(async () => {
      await tg?.stop();
      await fake?.close();
      await database?.drop();
    });

    const groupings: ReadonlyArray<[group: 'model' | 'provider' | 'account' | 'day', of: (seed: Seed) => string]> = [
      ['model', (seed) => seed.model],
      ['provider', (seed) => seed.provider],
      ['account', (seed) => accountIds.get(seed.account)!],
      ['day', dayOf],
    ];

    for (const [groupBy, of] of groupings) {
      it(`gives an administrator charged, cost and margin (charged − cost, known costs only) by ${groupBy}`, async () => {
        const answer = await admin.get(`/api/usage/summary?group_by=${groupBy}&account_id=all&since=${new Date(now - 5 * DAY_MS).toISOString()}&until=${new Date(now + 1000).toISOString()}`);
        expect(answer.status, answer.text).to.equal(200);
        const rows = answer.body.rows as Array<Record<string, string | number | null>>;
        const want = expected(of);
        expect(rows.map((row) => row.group).sort()).to.deep.equal([...want.keys()].sort());
        for (const row of rows) {
          const group = want.get(String(row.group))!;
          expect(row.cost, `${groupBy} ${row.group} charged`).to.equal(formatUnits(group.charged));
          expect(row.upstream_cost, `${groupBy} ${row.group} cost`).to.equal(formatUnits(group.cost));
          expect(row.uncosted_requests, `${groupBy} ${row.group} unknown costs`).to.equal(group.uncosted);
          expect(unitsToNano(String(row.margin)), `${groupBy} ${row.group} margin`).to.equal(group.costedCharged - group.cost);
        }
      });
    }

    it('reads a margin below zero when sold below cost, and leaves the unknown cost out of both sides', async () => {
      const rows = (await admin.get('/api/usage/summary?group_by=account&account_id=all')).body.rows as Array<Record<string, string | number | null>>;
      const otto = rows.find((row) => row.group === accountIds.get('otto'))!;
      // 0.02 charged at a cost of 0.020000001 (one nano-unit below cost), beside 1.000000001 at 0.75.
      expect(otto).to.include({ cost: '1.020000001', upstream_cost: '0.770000001', uncosted_requests: 0, margin: '0.25' });
      const claude = (await admin.get('/api/usage/summary?group_by=model&account_id=all')).body.rows as Array<Record<string, string | number | null>>;
      expect(claude.find((row) => row.group === 'claude-priced')).to.include({ cost: '0.52', upstream_cost: '0.020000001', uncosted_requests: 1, margin: '-0.000000001' });
      const unaRow = rows.find((row) => row.group === accountIds.get('una'))!;
      // 0.123456789 + 0.000000007 charged at a cost of 0.061728394 + 0.000000003; the 0.5 of unknown cost is in neither.
      expect(unaRow).to.include({ cost: '0.623456796', upstream_cost: '0.061728397', uncosted_requests: 1, margin: '0.061728399' });
    });

    it("carries cost, unknown costs and margin in an administrator's CSV", async () => {
      const answer = await admin.get('/api/usage/summary?group_by=model&account_id=all&format=csv');
      expect(answer.status).to.equal(200);
      const [header, ...lines] = answer.text.trimEnd().split('\r\n');
      const columns = header.split(',');
      expect(columns.slice(-3)).to.deep.equal(OPERATOR_FIELDS);
      const json = (await admin.get('/api/usage/summary?group_by=model&account_id=all')).body.rows as Array<Record<string, string | number | null>>;
      const at = (name: string) => columns.indexOf(name);
      expect(lines.map((line) => line.split(',')[at('upstream_cost')])).to.deep.equal(json.map((row) => row.upstream_cost));
      expect(lines.map((line) => line.split(',')[at('margin')])).to.deep.equal(json.map((row) => row.margin));
    });

    it('never shows an account what its requests cost upstream: summary, requests, one request, CSVs', async () => {
      for (const groupBy of ['model', 'key', 'day', 'session']) {
        const rows = (await una.get(`/api/usage/summary?group_by=${groupBy}`)).body.rows as Array<Record<string, unknown>>;
        expect(rows.length, groupBy).to.be.above(0);
        for (const row of rows) for (const field of OPERATOR_FIELDS) expect(row, `${groupBy} ${field}`).to.not.have.property(field);
      }
      const usage = (await una.get('/api/usage')).body as { usage: Array<Record<string, unknown>>; totals: Record<string, unknown> };
      expect(usage.usage).to.have.length(3);
      for (const row of [...usage.usage, usage.totals]) for (const field of [...OPERATOR_FIELDS, 'upstreamCost']) expect(row).to.not.have.property(field);
      const one = (await una.get('/api/usage/requests/req_margin_0')).body.request as Record<string, unknown>;
      expect(one).to.have.property('cost', '0.123456789');
      for (const field of [...OPERATOR_FIELDS, 'upstreamCost']) expect(one).to.not.have.property(field);
      for (const path of ['/api/usage/summary?group_by=model&format=csv', '/api/usage?format=csv']) {
        const answer = await una.get(path);
        expect(answer.status, path).to.equal(200);
        const header = answer.text.split('\r\n')[0].split(',');
        for (const field of OPERATOR_FIELDS) expect(header, `${path} ${field}`).to.not.include(field);
        // Nor any upstream figure in a cell: 0.061728394 is the one cost that is not also a charge.
        expect(answer.text, path).to.not.include('0.061728394');
      }
    });
  });
}
