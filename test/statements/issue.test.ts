/**
 * Issuing statements against each store (SQLite, and PostgreSQL when it answers): a month of credits,
 * charges, a refund and a dispute gives figures equal to the ledger to the nano-unit; an issued
 * statement never changes, whatever reaches the ledger later, and a later one shows the correction.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { createHash, randomBytes } from 'node:crypto';
import { parseConfig } from '../../src/config/load';
import type { GatewayConfig } from '../../src/config/types';
import { readDocument } from '../../src/statements/document';
import { issueClosedMonths, issueMonthForAll, MonthOpenError } from '../../src/statements/issue';
import { parseMonth } from '../../src/statements/month';
import { openSqlite } from '../../src/store/sqlite-driver';
import { SqliteStore } from '../../src/store/sqlite';
import { PostgresStore } from '../../src/store/postgres';
import type { Account, ChargeRecord, Store } from '../../src/store/store';
import { NO_TOKENS } from '../../src/protocols/types';
import { PLAIN_CHARGE } from '../helpers/charges';
import { createTestDatabase, postgresProblem, type TestDatabase } from '../helpers/services';
import '../helpers/test-secret-key';

const CONFIG_YAML = `
version: 1
store: { url: "sqlite::memory:" }
providers: {}
models: {}
plugins:
  billing:
    currency: eur
    statements: { name: "Example Gateways Ltd", address: ["1 Long Road", "Cambridge"], tax_id: "GB123456789", footer: "Questions: billing@example.com", number_prefix: "EX" }
`;

/** After December 2026 closed (an hour after midnight) and after January 2027 did. */
const AFTER_DECEMBER = new Date('2027-01-01T01:00:00Z');
const AFTER_JANUARY = new Date('2027-02-01T01:30:00Z');

interface Dialect {
  readonly name: string;
  open(): Promise<{ store: Store; raw(sql: string): Promise<void>; close(): Promise<void> } | string>;
}

const DIALECTS: readonly Dialect[] = [
  {
    name: 'SQLite',
    async open() {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-statements-'));
      const file = path.join(dir, 'tollgate.db');
      const store = new SqliteStore(file);
      await store.migrate();
      return {
        store,
        async raw(sql) {
          const db = openSqlite(file);
          try {
            db.exec(sql);
          } finally {
            db.close();
          }
        },
        async close() {
          await store.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: 'PostgreSQL',
    async open() {
      const problem = await postgresProblem();
      if (problem !== null) return problem;
      const database: TestDatabase = await createTestDatabase();
      const store = new PostgresStore({ url: database.url, connect_timeout_ms: 5000, statement_timeout_ms: 10_000, pool_size: 4 });
      await store.migrate();
      return {
        store,
        async raw(sql) {
          const client = new Client({ connectionString: database.url });
          await client.connect();
          try {
            await client.query(sql);
          } finally {
            await client.end();
          }
        },
        async close() {
          await store.close();
          await database.drop();
        },
      };
    },
  },
];

function charge(account: Account, keyId: string, model: string, cost: bigint, at: string): ChargeRecord {
  return {
    ...PLAIN_CHARGE,
    requestId: `req_${randomBytes(8).toString('hex')}`,
    accountId: account.id,
    keyId,
    model,
    provider: 'openai',
    endpoint: 'chat',
    cost,
    status: 200,
    outcome: 'delivered' as const,
    latencyMs: 5,
    createdAt: new Date(at),
    ...NO_TOKENS,
    inputTokens: 10,
    outputTokens: 5,
    usageSource: 'upstream' as const,
  };
}

async function key(store: Store, account: Account, name: string): Promise<string> {
  const secret = randomBytes(16);
  return (await store.createKey({ accountId: account.id, name, hash: createHash('sha256').update(secret).digest(), prefix: 'sk-test', last4: 'abcd' })).id;
}

for (const dialect of DIALECTS) {
  describe(`statements on ${dialect.name}`, function () {
    this.timeout(30_000);
    let opened: Exclude<Awaited<ReturnType<Dialect['open']>>, string>;
    let store: Store;
    let config: GatewayConfig;
    let amy: Account;
    let ci: string;
    let laptop: string;

    before(async function () {
      const result = await dialect.open();
      if (typeof result === 'string') {
        console.log(`      ${result}: the ${dialect.name} statements suite skipped`);
        this.skip();
      }
      opened = result;
      store = opened.store;
      config = parseConfig(CONFIG_YAML, 'statements.test.yaml', {});
      amy = await store.createAccount({ name: 'amy', role: 'user', email: null, passwordHash: null });
      ci = await key(store, amy, 'ci');
      laptop = await key(store, amy, 'laptop');
      // December 2026: credits of each kind, a card payment partly refunded and disputed, charges on two keys.
      await store.credit({ accountId: amy.id, amount: 10_000_000_001n, kind: 'admin', actor: 'root', note: 'welcome' });
      const [code] = await store.createRedemptionCodes({ hashes: [createHash('sha256').update('code-1').digest()], amount: 5_000_000_000n, createdBy: 'root', expiresAt: null });
      expect(code).to.not.equal(undefined);
      expect((await store.redeemCode(createHash('sha256').update('code-1').digest(), amy.id, 'amy')).ok).to.equal(true);
      const order = await store.payments.createOrder({ accountId: amy.id, kind: 'checkout', currency: 'eur', amountMinor: 2000, creditAmount: 20_000_000_000n });
      await store.payments.creditOrder(order.id, { paymentIntentId: 'pi_statement' });
      await store.payments.refundOrder(order.id, 500, 'ch_statement:refunded:500');
      await store.payments.disputeOrder(order.id, 300, 'dp_statement', 'fraudulent');
      await store.payments.debitAccount({ accountId: amy.id, amount: 1n, actor: 'root', note: 'rounding' });
      await store.recordCharges([
        charge(amy, ci, 'gpt-priced', 1_234_567_891n, '2026-12-03T10:00:00Z'),
        charge(amy, ci, 'claude-priced', 987_654_321n, '2026-12-10T10:00:00Z'),
        charge(amy, laptop, 'claude-priced', 3n, '2026-12-31T23:59:59.999Z'),
        charge(amy, laptop, 'gpt-free', 0n, '2026-12-20T00:00:00Z'),
      ]);
      // The credits and debits above are dated now; the ledger's history is a month of its own.
      await opened.raw(`UPDATE credits SET created_at = ${dialect.name === 'SQLite' ? Date.parse('2026-12-05T00:00:00Z') : "'2026-12-05T00:00:00Z'"}`);
      await opened.raw(`UPDATE debits SET created_at = ${dialect.name === 'SQLite' ? Date.parse('2026-12-06T00:00:00Z') : "'2026-12-06T00:00:00Z'"}`);
    });

    after(async () => opened?.close());

    it('refuses a month that has not closed', async () => {
      const error = await issueClosedMonths(store, config, amy, new Date('2027-01-01T00:30:00Z'), parseMonth('2026-12')!).catch((thrown: unknown) => thrown);
      expect(error).to.be.instanceOf(MonthOpenError);
    });

    it('issues December with figures equal to the ledger, to the nano-unit', async () => {
      const [december] = await issueClosedMonths(store, config, amy, AFTER_DECEMBER);
      const document = readDocument(december);
      expect(december.month).to.equal('2026-12');
      expect(document.number).to.equal('EX-2026-000001');
      expect(document.currency).to.equal('EUR');
      expect(document.issuer).to.deep.equal({ name: 'Example Gateways Ltd', address: ['1 Long Road', 'Cambridge'], tax_id: 'GB123456789', footer: 'Questions: billing@example.com' });
      const lines = Object.fromEntries(document.lines.map((line) => [line.id, line.amount]));
      expect(lines).to.deep.equal({
        card_payments: '20',
        redemption_codes: '5',
        admin_credits: '10.000000001',
        transfers_in: '0',
        charges: '2.222222215',
        refunds: '5',
        disputes: '3',
        disputes_won: '0',
        adjustments: '0.000000001',
        transfers_out: '0',
      });
      expect(document.opening).to.equal('0');
      expect(document.closing).to.equal('24.777777785');
      const [totals] = (await store.ledgerTotals()).filter((row) => row.accountId === amy.id);
      expect(document.closing).to.equal(formatNano(totals.credits - totals.charges - totals.debits));
      expect(document.closing).to.equal(formatNano((await store.balance(amy.id)).balance));
      expect(document.charges.requests).to.equal(4);
      expect(document.charges.by_model).to.deep.equal([
        { model: 'gpt-priced', requests: 1, amount: '1.234567891' },
        { model: 'claude-priced', requests: 2, amount: '0.987654324' },
        { model: 'gpt-free', requests: 1, amount: '0' },
      ]);
      // A personal account is its own one member: every key's charges are its own.
      expect(document.charges.by_payer).to.deep.equal([{ id: amy.id, name: 'amy', requests: 4, amount: '2.222222215' }]);
    });

    it('never changes an issued statement: a back-dated charge shows on the next one instead', async () => {
      const [before] = await issueClosedMonths(store, config, amy, AFTER_DECEMBER);
      await store.recordCharges([charge(amy, ci, 'gpt-priced', 500_000_000n, '2026-12-15T12:00:00Z')]);
      const again = await issueClosedMonths(store, config, amy, AFTER_DECEMBER);
      expect(again).to.have.length(1);
      expect(again[0]).to.deep.equal(before);
      expect(readDocument(again[0]).closing).to.equal('24.777777785');
      // The row refuses changes made behind the store's back, too.
      const refused = await opened.raw(`UPDATE statements SET document = '{}'`).then(() => null, (error: Error) => error.message);
      expect(refused).to.include('an issued statement never changes');
      const deleted = await opened.raw('DELETE FROM statements').then(() => null, (error: Error) => error.message);
      expect(deleted).to.include('an issued statement never changes');

      const [january, december] = await issueClosedMonths(store, config, amy, AFTER_JANUARY);
      expect(december).to.deep.equal(before);
      const document = readDocument(january);
      expect(document.number).to.equal('EX-2027-000001');
      expect(document.previous_number).to.equal('EX-2026-000001');
      expect(document.opening).to.equal('24.777777785');
      expect(document.earlier_entries).to.equal('-0.5');
      expect(document.closing).to.equal('24.277777785');
      expect(document.closing).to.equal(formatNano((await store.balance(amy.id)).balance));
    });

    it('issues a month once however many ask at once, numbering each account in one sequence', async () => {
      const bo = await store.createAccount({ name: 'bo', role: 'user', email: null, passwordHash: null });
      await store.credit({ accountId: bo.id, amount: 1n, kind: 'admin', actor: 'root', note: null });
      await opened.raw(`UPDATE credits SET created_at = ${dialect.name === 'SQLite' ? Date.parse('2026-12-07T00:00:00Z') : "'2026-12-07T00:00:00Z'"} WHERE account_id = '${bo.id}'`);
      const racing = await Promise.all(Array.from({ length: 5 }, () => issueMonthForAll(store, config, parseMonth('2026-12')!, AFTER_JANUARY)));
      const ids = racing.map((statements) => statements.map((statement) => `${statement.accountId}:${statement.id}`).sort().join());
      expect(new Set(ids).size).to.equal(1);
      const bos = racing[0].find((statement) => statement.accountId === bo.id)!;
      expect(bos.number).to.equal('EX-2026-000002');
      expect(readDocument(bos).closing).to.equal('0.000000001');
    });
  });
}

function formatNano(nano: bigint): string {
  const negative = nano < 0n;
  const magnitude = negative ? -nano : nano;
  const fraction = (magnitude % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${magnitude / 1_000_000_000n}${fraction === '' ? '' : `.${fraction}`}`;
}
