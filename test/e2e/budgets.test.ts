/**
 * Budgets end to end on one instance (SQLite, the in-process book): set through the management API by
 * a key's owner and by an administrator, refused with 402 budget_exceeded in each endpoint's shape and
 * the reset time, a change applied from the next request, the operator's default for a role, and
 * exactly three of twenty concurrent streams admitted against a budget for three holds.
 */
import { expect } from 'chai';
import { issueApiKey } from '../../src/auth/issue-key';
import { periodAt } from '../../src/billing/budget-period';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { chatStream } from '../helpers/upstream-replies';
import { ApiClient, expectError } from '../admin/api-client';
import { addAccount, consoleYaml, PASSWORD, passwordHash } from '../admin/fixtures';

const BODY = JSON.stringify({ model: 'gpt-priced', max_tokens: 1000, stream: true, messages: [{ role: 'user', content: 'Count to three.' }] });
/** What billing holds for BODY: one input token per byte at the dearest input price (cache writes, 1,250 nano-units), 1,000 output tokens at 5,000. */
const HOLD = BigInt(Buffer.byteLength(BODY)) * 1250n + 1000n * 5000n;
const units = (nano: bigint): string => (Number(nano) / 1e9).toFixed(9);

function post(url: string, key: string, body = BODY): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
}

describe('e2e: budgets on one instance', function () {
  this.timeout(30_000);
  let fake: FakeUpstream;
  let tg: TestGateway;
  let root: ApiClient;

  before(async () => {
    await passwordHash();
    fake = await startFakeUpstream();
    const yaml = `${consoleYaml(fake.url)}
budgets:
  role_defaults:
    admin: { amount: "0.000001", period: month, timezone: Asia/Tokyo }
`;
    tg = await startTestGateway({ yaml });
    await addAccount(tg.store, 'root', 'admin');
    root = await ApiClient.login(tg.url, 'root', PASSWORD);
  });

  after(async () => {
    await tg?.stop();
    await fake?.close();
  });

  async function fundedUser(name: string): Promise<{ id: string; client: ApiClient }> {
    const account = await addAccount(tg.store, name);
    await tg.store.credit({ accountId: account.id, amount: 1_000_000_000n, kind: 'admin', actor: 'test', note: null });
    return { id: account.id, client: await ApiClient.login(tg.url, name, PASSWORD) };
  }

  it("lets a key's owner set, show and remove its budget, naming the field of a bad one", async () => {
    const { client } = await fundedUser('bea');
    const { id } = await client.createKey({ name: 'ci' });
    const set = await client.patch(`/api/keys/${id}`, { budget: { amount: '5', period: 'day', timezone: 'Europe/Berlin' } });
    expect(set.status, set.text).to.equal(200);
    expect(set.body.key.budget).to.deep.equal({ amount: '5', period: 'day', timezone: 'Europe/Berlin' });
    expect((await client.get('/api/keys')).body.keys[0].budget).to.deep.equal({ amount: '5', period: 'day', timezone: 'Europe/Berlin' });
    expectError(await client.patch(`/api/keys/${id}`, { budget: { amount: '5', period: 'day', timezone: 'Mars/Olympus' } }), 400, 'invalid_request', 'budget.timezone');
    expectError(await client.patch(`/api/keys/${id}`, { budget: { amount: '5', period: 'fortnight' } }), 400, 'invalid_request', 'budget.period');
    expectError(await client.patch(`/api/keys/${id}`, { budget: { amount: '-1', period: 'day' } }), 400, 'invalid_request', 'amount');
    expectError(await client.patch(`/api/keys/${id}`, { budget: { amount: '1', period: 'day', reset: 'daily' } }), 400, 'invalid_request', 'budget.reset');
    const weekly = await client.patch(`/api/keys/${id}`, { budget: { amount: 2.5, period: 'week' } });
    expect(weekly.body.key.budget).to.deep.equal({ amount: '2.5', period: 'week', timezone: 'UTC' });
    const removed = await client.patch(`/api/keys/${id}`, { budget: null });
    expect(removed.body.key.budget).to.equal(null);
  });

  it("lets an administrator set an account's budget (audited), and no one else", async () => {
    const { id, client } = await fundedUser('cal');
    expectError(await client.patch(`/api/admin/accounts/${id}`, { budget: { amount: '1', period: 'day' } }), 403, 'forbidden');
    const set = await root.patch(`/api/admin/accounts/${id}`, { budget: { amount: '200', period: 'month', timezone: 'America/New_York' } });
    expect(set.status, set.text).to.equal(200);
    expect(set.body.account).to.deep.include({ disabled: false, budget: { amount: '200', period: 'month', timezone: 'America/New_York' } });
    expect((await tg.store.findAccountById(id))!.budget).to.deep.equal({ amount: 200_000_000_000n, period: 'month', timezone: 'America/New_York' });
    const entries = await tg.store.listAudit({ target: id, action: 'account.budget' });
    expect(entries).to.have.length(1);
    expect(entries[0].after).to.deep.equal({ budget: { amount: '200', period: 'month', timezone: 'America/New_York' } });
    const cleared = await root.patch(`/api/admin/accounts/${id}`, { budget: null });
    expect(cleared.body.account.budget).to.equal(null);
  });

  it('refuses a request that would cross the budget with 402 budget_exceeded in the endpoint shape, with the reset time', async () => {
    const { id } = await fundedUser('dee');
    const { key, record } = await issueApiKey(tg.store, { accountId: id, name: null });
    await tg.store.setKeyLimits(record.id, { budget: { amount: HOLD - 1n, period: 'day', timezone: 'Europe/Berlin' } });
    const refused = await post(tg.url, key);
    expect(refused.status).to.equal(402);
    const reset = periodAt(new Date(), 'day', 'Europe/Berlin').end.toISOString().replace('.000Z', 'Z');
    expect(refused.headers.get('x-tollgate-budget-reset')).to.equal(reset);
    expect(refused.headers.get('x-should-retry')).to.equal('false');
    const { error } = (await refused.json()) as { error: { type: string; code: string; message: string } };
    expect(error.type).to.equal('insufficient_quota');
    expect(error.code).to.equal('budget_exceeded');
    expect(error.message).to.include("This API key's daily budget of").and.include('(Europe/Berlin)').and.include(`resets at ${reset}`);
    expect(fake.requests.length).to.equal(0);

    const messages = await fetch(`${tg.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-priced', max_tokens: 2000, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(messages.status).to.equal(402);
    expect(messages.headers.get('x-tollgate-budget-reset')).to.equal(reset);
    const body = (await messages.json()) as { type: string; error: { type: string; message: string } };
    expect(body.type).to.equal('error');
    expect(body.error.type).to.equal('billing_error');
    expect(body.error.message).to.include('budget');
  });

  it('applies a changed budget from the next request on, without a restart', async () => {
    const { id } = await fundedUser('eli');
    const { key } = await issueApiKey(tg.store, { accountId: id, name: null });
    const account = (await tg.store.findAccountById(id))!;
    await root.patch(`/api/admin/accounts/${account.id}`, { budget: { amount: units(HOLD - 1n), period: 'week' } });
    expect((await post(tg.url, key)).status).to.equal(402);
    await root.patch(`/api/admin/accounts/${account.id}`, { budget: { amount: units(HOLD), period: 'week' } });
    fake.enqueue(chatStream({ text: 'one two three', includeUsage: true, inputTokens: 20, outputTokens: 10 }));
    const admitted = await post(tg.url, key);
    expect(admitted.status).to.equal(200);
    await admitted.text();
  });

  it("holds an account without a budget of its own to its role's default, and its own budget replaces it", async () => {
    const admin = await addAccount(tg.store, 'ops', 'admin');
    await tg.store.credit({ accountId: admin.id, amount: 1_000_000_000n, kind: 'admin', actor: 'test', note: null });
    const { key } = await issueApiKey(tg.store, { accountId: admin.id, name: null });
    const refused = await post(tg.url, key);
    expect(refused.status).to.equal(402);
    expect(((await refused.json()) as { error: { message: string } }).error.message).to.include("This account's monthly budget of 0.000001 (Asia/Tokyo)");
    await tg.store.setAccountBudget(admin.id, { amount: 1_000_000_000n, period: 'day', timezone: 'UTC' });
    fake.enqueue(chatStream({ text: 'ok', includeUsage: true, inputTokens: 5, outputTokens: 1 }));
    const admitted = await post(tg.url, key);
    expect(admitted.status).to.equal(200);
    await admitted.text();
  });

  it('admits exactly 3 of 20 concurrent streams against a budget for 3 holds', async () => {
    const { id } = await fundedUser('fay');
    const { key, record } = await issueApiKey(tg.store, { accountId: id, name: null });
    await tg.store.setKeyLimits(record.id, { budget: { amount: 3n * HOLD + HOLD / 2n, period: 'day', timezone: 'UTC' } });
    // The admitted streams stay open until the 17 refusals are back, so no settlement frees budget early.
    let answered = 0;
    let allRefused!: () => void;
    const refusalsBack = new Promise<void>((resolve) => (allRefused = resolve));
    for (let i = 0; i < 3; i++) fake.enqueue({ until: refusalsBack, then: chatStream({ text: 'one two three', includeUsage: true, inputTokens: 20, outputTokens: 10 }) });
    const before = fake.requests.length;
    const statuses = await Promise.all(
      Array.from({ length: 20 }, () =>
        post(tg.url, key).then(async (res) => {
          if (res.status !== 200) {
            await res.arrayBuffer();
            if (++answered === 17) allRefused();
            return res.status;
          }
          await res.text();
          return res.status;
        }),
      ),
    );
    expect(statuses.filter((status) => status === 200), 'admitted').to.have.length(3);
    expect(statuses.filter((status) => status === 402), 'refused').to.have.length(17);
    expect(fake.requests.length - before).to.equal(3);
  });
});
