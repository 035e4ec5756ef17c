/**
 * Alerts on one instance: the 80% alert fires once however many requests cross it, reaching the
 * webhook (signed, verified with the snippet docs/budgets.md gives receivers), the audit log, the
 * metric and GET /api/budgets; a receiver's 500 is retried with the same event id; a receiver that
 * hangs delays no request; a low balance fires once until the next credit.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { issueApiKey } from '../../src/auth/issue-key';
import { PACKAGE_ROOT } from '../../src/paths';
import { startAlertReceiver, type AlertReceiver } from '../helpers/alert-receiver';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { chatCompletion } from '../helpers/upstream-replies';
import { ApiClient } from '../admin/api-client';
import { addAccount, consoleYaml, PASSWORD, passwordHash, waitFor } from '../admin/fixtures';

const SECRET = 'whsec-test-alerts';
/** 80 input tokens at 1,000 nano-units and 50 output tokens at 5,000: what each answer below costs. */
const COST = 330_000n;
/** Held at 352,500: its 82 bytes as input tokens at the dearest input price (1,250), 50 output tokens at 5,000. */
const BODY = JSON.stringify({ model: 'gpt-priced', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });

type Verify = (secret: string, header: string, rawBody: string, toleranceSeconds?: number) => boolean;

/** The receiver's verification snippet, exactly as docs/budgets.md prints it. */
function documentedVerifier(): Verify {
  const page = readFileSync(path.join(PACKAGE_ROOT, 'docs', 'budgets.md'), 'utf8');
  const block = /<!-- verify-snippet:start -->\n```js\n([\s\S]*?)```\n<!-- verify-snippet:end -->/.exec(page);
  expect(block, 'the snippet in docs/budgets.md').to.not.equal(null);
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- running the documented code is the point
  return new Function('require', `${block![1]}\nreturn verifyTollgateSignature;`)(require) as Verify;
}

describe('e2e: alerts on one instance', function () {
  this.timeout(30_000);
  let fake: FakeUpstream;
  let receiver: AlertReceiver;
  let tg: TestGateway;

  before(async () => {
    await passwordHash();
    fake = await startFakeUpstream();
    receiver = await startAlertReceiver();
    const yaml = `${consoleYaml(fake.url)}
alerts:
  thresholds: [80, 100]
  low_balance: "0.0005"
  webhook: { url: "${receiver.url}", secret: "${SECRET}", timeout_ms: 10000 }
`;
    tg = await startTestGateway({ yaml });
  });

  after(async () => {
    await tg?.stop();
    await receiver?.close();
    await fake?.close();
  });

  async function request(key: string): Promise<number> {
    fake.enqueue(chatCompletion({ text: 'ok', inputTokens: 80, outputTokens: 50 }));
    const res = await fetch(`${tg.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: BODY });
    await res.arrayBuffer();
    return res.status;
  }

  it('fires the 80% alert once however many requests cross it, signed so the documented snippet verifies it', async () => {
    const account = await addAccount(tg.store, 'ann');
    await tg.store.credit({ accountId: account.id, amount: 1_000_000_000n, kind: 'admin', actor: 'test', note: null });
    // 80% of the budget is 12 answers' cost; 14 answers fit (13 answers and one hold).
    const { key, record } = await issueApiKey(tg.store, { accountId: account.id, name: 'ci', budget: { amount: 4_800_000n, period: 'day', timezone: 'Europe/Berlin' } });
    const before = receiver.deliveries.length;
    const statuses: number[] = [];
    for (let i = 0; i < 14; i++) statuses.push(await request(key));
    expect(statuses.every((status) => status === 200), String(statuses)).to.equal(true);
    await receiver.received(before + 1);
    const alerts = await waitFor(() => tg.store.listAlerts({ accountId: account.id }), (found) => found.length >= 1, 'the alert');
    // Later requests (all past 80%) had their chance to fire it again.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await tg.store.listAlerts({ accountId: account.id })).to.have.length(1);
    expect(receiver.deliveries.length - before).to.equal(1);

    const delivery = receiver.deliveries[before];
    const event = JSON.parse(delivery.body) as Record<string, unknown>;
    expect(event).to.deep.include({
      id: alerts[0].id,
      type: 'budget.threshold',
      account_id: account.id,
      key_id: record.id,
      threshold_percent: 80,
      budget: { scope: 'key', amount: '0.0048', period: 'day', timezone: 'Europe/Berlin' },
    });
    expect(BigInt(Math.round(Number(event.spent) * 1e9))).to.equal(12n * COST);
    expect(delivery.headers['x-tollgate-event-id']).to.equal(alerts[0].id);
    const verify = documentedVerifier();
    const header = String(delivery.headers['x-tollgate-signature']);
    expect(verify(SECRET, header, delivery.body)).to.equal(true);
    expect(verify(SECRET, header, delivery.body.replace('"threshold_percent":80', '"threshold_percent":81'))).to.equal(false);
    expect(verify('another-secret', header, delivery.body)).to.equal(false);

    const audit = await tg.store.listAudit({ action: 'budget.alert', target: record.id });
    expect(audit).to.have.length(1);
    expect(audit[0]).to.deep.include({ actor: 'server', surface: 'server', accountId: account.id });
    const metrics = await (await fetch(`${tg.url}/metrics`)).text();
    expect(metrics).to.match(/tollgate_budget_alerts_total\{kind="budget",threshold="80"\} 1\b/);

    const client = await ApiClient.login(tg.url, 'ann', PASSWORD);
    const listed = await client.get('/api/budgets');
    expect(listed.status, listed.text).to.equal(200);
    expect(listed.body.budgets).to.have.length(1);
    expect(listed.body.budgets[0]).to.deep.include({ scope: 'key', id: record.id, name: 'ci', amount: '0.0048', spent: '0.00462', role_default: false });
    expect(listed.body.alerts.map((alert: { id: string }) => alert.id)).to.deep.equal([alerts[0].id]);
    await waitFor(() => tg.store.listAlerts({ accountId: account.id }), (found) => found[0].deliveredAt !== null, 'delivery recorded');
  });

  it('retries a delivery the receiver answers with 500, with the same event id and body', async () => {
    const account = await addAccount(tg.store, 'bob');
    await tg.store.credit({ accountId: account.id, amount: 1_000_000_000n, kind: 'admin', actor: 'test', note: null });
    // Two answers fit (each holds 352,500); the second takes the spend to 82.5%.
    const { key } = await issueApiKey(tg.store, { accountId: account.id, name: null, budget: { amount: 800_000n, period: 'week', timezone: 'UTC' } });
    const before = receiver.deliveries.length;
    receiver.answer(500);
    expect(await request(key)).to.equal(200);
    expect(await request(key)).to.equal(200);
    await receiver.received(before + 2);
    const [first, second] = receiver.deliveries.slice(before);
    expect(second.headers['x-tollgate-event-id']).to.equal(first.headers['x-tollgate-event-id']);
    expect(second.body).to.equal(first.body);
    const [stored] = await waitFor(() => tg.store.listAlerts({ accountId: account.id }), (found) => found.length === 1 && found[0].deliveredAt !== null, 'the retried delivery');
    expect(stored.id).to.equal(first.headers['x-tollgate-event-id']);
    expect(stored.attempts).to.equal(2);
  });

  it('delays no request while the receiver hangs', async () => {
    const account = await addAccount(tg.store, 'cy');
    await tg.store.credit({ accountId: account.id, amount: 1_000_000_000n, kind: 'admin', actor: 'test', note: null });
    // One answer (held at 352,500) spends 330,000 of 400,000: past 80%.
    const { key } = await issueApiKey(tg.store, { accountId: account.id, name: null, budget: { amount: 400_000n, period: 'month', timezone: 'UTC' } });
    const before = receiver.deliveries.length;
    receiver.answer('hang');
    expect(await request(key)).to.equal(200);
    await receiver.received(before + 1);
    // The delivery is open and unanswered; requests go on as before, each answered while it hangs.
    const { key: unlimited } = await issueApiKey(tg.store, { accountId: account.id, name: null });
    for (let i = 0; i < 3; i++) {
      expect(await request(unlimited)).to.equal(200);
      expect(receiver.hanging()).to.equal(1);
    }
  });

  it('fires a low balance once, and again only after the next credit', async () => {
    const account = await addAccount(tg.store, 'dot');
    await tg.store.credit({ accountId: account.id, amount: 1_700_000n, kind: 'admin', actor: 'test', note: null });
    const { key } = await issueApiKey(tg.store, { accountId: account.id, name: null });
    // 1,700,000 − 330,000 × 4 = 380,000: below the 500,000 threshold after the fourth answer, and still
    // more than one hold (352,500), so the answer after the next credit fits.
    for (let i = 0; i < 4; i++) expect(await request(key)).to.equal(200);
    const first = await waitFor(() => tg.store.listAlerts({ accountId: account.id }), (found) => found.length >= 1, 'the low-balance alert');
    expect(first).to.have.length(1);
    expect(JSON.parse(first[0].body)).to.deep.include({ type: 'balance.low', account_id: account.id, low_balance: '0.0005' });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await tg.store.listAlerts({ accountId: account.id })).to.have.length(1);
    await tg.store.credit({ accountId: account.id, amount: 1n, kind: 'admin', actor: 'test', note: null });
    expect(await request(key)).to.equal(200);
    await waitFor(() => tg.store.listAlerts({ accountId: account.id }), (found) => found.length === 2, 'the second fall');
  });
});
