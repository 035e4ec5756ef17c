/**
 * Statements through the management API, on the embedded store and on PostgreSQL (skipped, saying so,
 * without it): a month of real charges, credits, a refund and a dispute gives a statement whose figures
 * equal the ledger to the nano-unit, in JSON, CSV, HTML and a PDF whose text is checked; another
 * account's statement is 404; an issued one never changes.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { formatUnits } from '../../src/billing/money';
import { openSqlite } from '../../src/store/sqlite-driver';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { createTestDatabase, postgresProblem } from '../helpers/services';
import { pdfText } from '../helpers/pdf-text';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { ApiClient, expectError } from './api-client';
import { addAccount, chargesOf, chat, consoleYaml, PASSWORD, passwordHash } from './fixtures';
import '../helpers/test-secret-key';

const STATEMENTS = `  billing: { flush_interval_ms: 10, statements: { name: "Example Gateways Ltd", address: ["1 Long Road"], tax_id: "GB123456789", footer: "Thank you" } }`;

interface Backend {
  readonly name: string;
  /** The store's URL, or why the backend is not there. */
  open(): Promise<{ url: string; raw(sql: string): Promise<void>; drop(): Promise<void> } | string>;
}

const BACKENDS: readonly Backend[] = [
  {
    name: 'the embedded store',
    async open() {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-statements-api-'));
      const file = path.join(dir, 'tollgate.db');
      return {
        url: `sqlite:${file}`,
        async raw(sql) {
          const db = openSqlite(file);
          try {
            db.exec(sql);
          } finally {
            db.close();
          }
        },
        async drop() {
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
      const database = await createTestDatabase();
      return {
        url: database.url,
        async raw(sql) {
          const client = new Client({ connectionString: database.url });
          await client.connect();
          try {
            await client.query(sql);
          } finally {
            await client.end();
          }
        },
        drop: () => database.drop(),
      };
    },
  },
];

for (const backend of BACKENDS) {
  describe(`management API: statements on ${backend.name}`, function () {
    this.timeout(30_000);
    let opened: Exclude<Awaited<ReturnType<Backend['open']>>, string>;
    let fake: FakeUpstream;
    let tg: TestGateway;
    let amy: ApiClient;
    let bo: ApiClient;
    let root: ApiClient;
    let amyId: string;
    const sqlite = backend.name !== 'PostgreSQL';
    const at = (iso: string) => (sqlite ? String(Date.parse(iso)) : `'${iso}'`);

    before(async function () {
      const result = await backend.open();
      if (typeof result === 'string') {
        console.log(`      ${result}: the PostgreSQL run of the statements API skipped`);
        this.skip();
      }
      opened = result;
      await passwordHash();
      fake = await startFakeUpstream();
      const yaml = consoleYaml(fake.url, { plugins: STATEMENTS }).replace('store: { url: "sqlite::memory:" }', `store: { url: "${opened.url}" }`).replace('  billing: { flush_interval_ms: 10 }\n', '');
      tg = await startTestGateway({ yaml, storeFromConfig: true });
      amyId = (await addAccount(tg.store, 'amy')).id;
      await addAccount(tg.store, 'bo');
      await addAccount(tg.store, 'root', 'admin');
      [amy, bo, root] = await Promise.all(['amy', 'bo', 'root'].map((name) => ApiClient.login(tg.url, name, PASSWORD)));

      // November 2026 for amy: an operator's credit, a card payment refunded in part and disputed in part, real charges.
      expect((await root.post(`/api/admin/accounts/${amyId}/credits`, { amount: '7.000000003', note: 'welcome' })).status).to.equal(201);
      const order = await tg.store.payments.createOrder({ accountId: amyId, kind: 'checkout', currency: 'usd', amountMinor: 2000, creditAmount: 20_000_000_000n });
      await tg.store.payments.creditOrder(order.id, { paymentIntentId: 'pi_api' });
      await tg.store.payments.refundOrder(order.id, 250, 'ch_api:refunded:250');
      await tg.store.payments.disputeOrder(order.id, 100, 'dp_api', 'fraudulent');
      const key = await amy.createKey({ name: 'ci' });
      for (let i = 0; i < 3; i += 1) expect((await chat(tg.url, key.secret, 'gpt-priced')).status).to.equal(200);
      await chargesOf(tg.store, amyId, 3);
      for (const table of ['credits', 'debits', 'charges']) await opened.raw(`UPDATE ${table} SET created_at = ${at('2026-11-20T12:00:00Z')}`);
    });

    after(async () => {
      await tg?.stop();
      await fake?.close();
      await opened?.drop();
    });

    it('lists the closed month and gives its figures, equal to the ledger to the nano-unit', async () => {
      const listed = await amy.get('/api/statements');
      expect(listed.status, listed.text).to.equal(200);
      expect(listed.body.statements.map((statement: { month: string }) => statement.month)).to.deep.equal(['2026-11']);
      const [summary] = listed.body.statements;
      const { body, status } = await amy.get(`/api/statements/${summary.id}`);
      expect(status).to.equal(200);
      const statement = body.statement;
      const charges = await tg.store.listCharges({ accountId: amyId, limit: 100 });
      const charged = charges.reduce((sum, charge) => sum + charge.cost, 0n);
      expect(charged > 0n).to.equal(true);
      const lines = Object.fromEntries(statement.lines.map((line: { id: string; amount: { exact: string } }) => [line.id, line.amount.exact]));
      expect(lines).to.include({ admin_credits: '7.000000003', card_payments: '20', refunds: '2.5', disputes: '1', charges: formatUnits(charged) });
      expect(statement.opening.exact).to.equal('0');
      expect(statement.closing.exact).to.equal(formatUnits((await tg.store.balance(amyId)).balance));
      expect(statement.closing.exact).to.equal(formatUnits(27_000_000_003n - 3_500_000_000n - charged));
      expect(statement.closing.shown).to.match(/^23\.\d\d USD$/);
      expect(statement.charges.by_model).to.deep.equal([{ model: 'gpt-priced', requests: 3, amount: { exact: formatUnits(charged), shown: statement.charges.by_model[0].amount.shown } }]);
      expect(statement.charges.by_payer.map((group: { name: string }) => group.name)).to.deep.equal(['amy']);
      expect(statement.issuer).to.deep.equal({ name: 'Example Gateways Ltd', address: ['1 Long Road'], tax_id: 'GB123456789', footer: 'Thank you' });
      expect(statement.number).to.match(/^TG-2026-\d{6}$/);
      expect(summary.closing).to.deep.equal(statement.closing);
    });

    it('answers CSV with exact figures, a printable page and a PDF that says the number and the closing balance', async () => {
      const [summary] = (await amy.get('/api/statements')).body.statements;
      const csv = await amy.get(`/api/statements/${summary.id}?format=csv`);
      expect(csv.headers.get('content-type')).to.equal('text/csv; charset=utf-8');
      expect(csv.headers.get('content-disposition')).to.equal(`attachment; filename="${summary.number}.csv"`);
      expect(csv.text.split('\r\n')[0]).to.equal('statement,month,section,item,name,requests,amount,currency,shown');
      expect(csv.text).to.include(`${summary.number},2026-11,balance,closing,Closing balance,,${summary.closing.exact},USD,${summary.closing.shown}`);

      const html = await amy.get(`/api/statements/${summary.id}?format=html`);
      expect(html.headers.get('content-type')).to.equal('text/html; charset=utf-8');
      expect(html.headers.get('content-security-policy')).to.match(/^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'; frame-ancestors 'none'$/);
      expect(html.text).to.include(summary.number).and.include(summary.closing.shown).and.include('@page { size: A4');
      expect(html.text).to.not.include('<script');

      const res = await fetch(`${tg.url}/api/statements/${summary.id}?format=pdf`, { headers: amy.headersFor('GET', {}) });
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.equal('application/pdf');
      const pdf = Buffer.from(await res.arrayBuffer());
      expect(pdf.subarray(0, 5).toString('latin1')).to.equal('%PDF-');
      const text = pdfText(pdf);
      expect(text).to.include(summary.number);
      expect(text).to.include(`Closing balance\n${summary.closing.shown}`);
      expect(text).to.include('Example Gateways Ltd');

      expectError(await amy.get(`/api/statements/${summary.id}?format=docx`), 400, 'invalid_request');
    });

    it('shows an account only its own statements: another account\'s is 404, as one that does not exist', async () => {
      const [summary] = (await amy.get('/api/statements')).body.statements;
      expect((await bo.get('/api/statements')).body.statements.every((statement: { account_id: string }) => statement.account_id !== amyId)).to.equal(true);
      const theirs = await bo.get(`/api/statements/${summary.id}`);
      expectError(theirs, 404, 'not_found');
      expect(theirs.body.error.message).to.equal((await bo.get('/api/statements/st_ffffffffffffffff')).body.error.message);
      expectError(await bo.get(`/api/statements/${summary.id}?format=pdf`), 404, 'not_found');
      expectError(await amy.get(`/api/admin/statements?account=${amyId}`), 403, 'forbidden');
      const admin = await root.get(`/api/admin/statements?account=${amyId}`);
      expect(admin.body.statements).to.deep.equal([summary]);
      expect((await root.get(`/api/admin/statements/${summary.id}`)).body.statement.closing).to.deep.equal(summary.closing);
      expectError(await root.get('/api/admin/statements'), 400, 'invalid_request');
    });

    it('never changes an issued statement when a back-dated charge arrives', async () => {
      const [summary] = (await amy.get('/api/statements')).body.statements;
      const before = (await amy.get(`/api/statements/${summary.id}`)).text;
      const [charge] = await tg.store.listCharges({ accountId: amyId, limit: 1 });
      await tg.store.recordCharges([{ ...charge, requestId: `${charge.requestId}-late`, cost: 123_456_789n, createdAt: new Date('2026-11-29T00:00:00Z') }]);
      expect((await amy.get(`/api/statements/${summary.id}`)).text).to.equal(before);
      expect((await amy.get('/api/statements')).body.statements).to.deep.equal([summary]);
    });
  });
}
