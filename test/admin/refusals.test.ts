/**
 * Refused requests through a real gateway: a wrong key, an unknown model, a balance and a budget that
 * cannot admit the request each leave a row in the usage list with their reason and no cost, the
 * totals and the by-reason summary count them, and a budget that refuses fires its 100 % alert.
 */
import { expect } from 'chai';
import { unitsToNano } from '../../src/billing/money';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { chatCompletion } from '../helpers/upstream-replies';
import { ApiClient } from './api-client';
import { addAccount, chargesOf, chat, consoleYaml, PASSWORD, passwordHash, waitFor } from './fixtures';

describe('management API: refused requests', function () {
  this.timeout(20_000);
  let fake: FakeUpstream;
  let tg: TestGateway;
  let vic: ApiClient;
  let vicId: string;

  before(async () => {
    await passwordHash();
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: consoleYaml(fake.url) });
    vicId = (await addAccount(tg.store, 'vic')).id;
    vic = await ApiClient.login(tg.url, 'vic', PASSWORD);
  });

  after(async () => {
    await tg?.stop();
    await fake?.close();
  });

  it('lists each refused request with its reason and what refused it, at no cost, and counts them', async () => {
    const ci = await vic.createKey({ name: 'ci' });
    // No balance yet: 402 from the account.
    expect((await chat(tg.url, ci.secret, 'gpt-priced')).status).to.equal(402);
    expect((await chat(tg.url, ci.secret, 'no-such-model')).status).to.equal(404);
    expect((await chat(tg.url, 'sk-wrong', 'gpt-priced')).status).to.equal(401);
    await tg.store.credit({ accountId: vicId, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: null });
    fake.enqueue(chatCompletion({ inputTokens: 100, outputTokens: 50, model: 'gpt-priced' }));
    expect((await chat(tg.url, ci.secret, 'gpt-priced')).status).to.equal(200);
    await chargesOf(tg.store, vicId, 1);

    const listed = await waitFor(() => vic.get('/api/usage'), (answer) => answer.body.usage.length >= 3, 'the refusals in the usage list');
    const rows = listed.body.usage as Record<string, unknown>[];
    expect(rows.map((row) => [row.status, row.outcome, row.reason, row.refused_by])).to.deep.equal([
      [200, 'delivered', null, null],
      [404, 'refused', 'TOLLGATE_ERR_MODEL_NOT_FOUND', null],
      [402, 'refused', 'TOLLGATE_ERR_INSUFFICIENT_BALANCE', 'account'],
    ]);
    expect(rows[1]).to.deep.include({ model: 'no-such-model', key_name: 'ci', cost: '0', count: 1 });
    expect(listed.body.totals).to.deep.equal({ requests: 3, cost: '0.00035', failed: 0, refused: 2 });
    const refused = await vic.get('/api/usage?status=refused');
    expect(refused.body.usage.map((row: { reason: string }) => row.reason)).to.deep.equal(['TOLLGATE_ERR_MODEL_NOT_FOUND', 'TOLLGATE_ERR_INSUFFICIENT_BALANCE']);
    expect((await vic.get('/api/usage?status=ok')).body.totals).to.deep.include({ requests: 1, refused: 0 });
    const reasons = await vic.get('/api/usage/refusals');
    expect(reasons.body.reasons.map((row: { reason: string; requests: number }) => [row.reason, row.requests]).sort()).to.deep.equal([
      ['TOLLGATE_ERR_INSUFFICIENT_BALANCE', 1],
      ['TOLLGATE_ERR_MODEL_NOT_FOUND', 1],
    ]);
    // The 401 belongs to no account: the operator's.
    const all = await waitFor(() => tg.store.refusals.list({ limit: 10 }), (list) => list.some((row) => row.status === 401), 'the 401');
    const unknown = all.find((row) => row.status === 401)!;
    expect(unknown).to.deep.include({ accountId: null, keyId: null, code: 'TOLLGATE_ERR_AUTH_INVALID_KEY' });
    expect(unknown.address).to.be.a('string').and.not.equal('');
  });

  it('pages by cursor, and the pages add up to the totals', async () => {
    const pager = await vic.createKey({ name: 'pager' });
    for (let n = 0; n < 5; n += 1) {
      fake.enqueue(chatCompletion({ inputTokens: 10 + n, outputTokens: 1, model: 'gpt-priced' }));
      expect((await chat(tg.url, pager.secret, 'gpt-priced')).status).to.equal(200);
    }
    expect((await chat(tg.url, pager.secret, 'nope')).status).to.equal(404);
    await chargesOf(tg.store, vicId, 6);
    await waitFor(() => vic.get(`/api/usage?key_id=${pager.id}`), (answer) => answer.body.totals.requests === 6, 'six rows');
    const seen: string[] = [];
    let cost = 0n;
    let cursor: string | null = null;
    let first: { totals: { requests: number; cost: string } } | null = null;
    do {
      const answer: { body: { usage: { request_id: string; cost: string }[]; next_cursor: string | null; totals: { requests: number; cost: string } } } =
        await vic.get(`/api/usage?key_id=${pager.id}&limit=4${cursor === null ? '' : `&cursor=${cursor}`}`);
      first ??= answer.body;
      for (const row of answer.body.usage) {
        seen.push(row.request_id);
        cost += unitsToNano(row.cost);
      }
      cursor = answer.body.next_cursor;
    } while (cursor !== null);
    expect(new Set(seen).size).to.equal(6);
    expect(seen).to.have.length(first.totals.requests);
    expect(cost).to.equal(unitsToNano(first.totals.cost));
    const bad = await vic.get('/api/usage?cursor=garbage');
    expect(bad.status).to.equal(400);
    expect(bad.body.error.message).to.match(/out of date or damaged/);
    const backwards = await vic.get('/api/usage?since=2026-11-10&until=2026-11-09T00:00:00Z');
    expect(backwards.body.error.message).to.equal('The start date must be before the end date.');
  });

  it('a budget that cannot admit a request fires its 100 % alert, saying it blocks', async () => {
    const budgeted = await vic.createKey({ name: 'budgeted' });
    expect((await vic.patch(`/api/keys/${budgeted.id}`, { budget: { amount: '0.000001', period: 'month' } })).status).to.equal(200);
    expect((await chat(tg.url, budgeted.secret, 'gpt-priced')).status).to.equal(402);
    const answer = await waitFor(() => vic.get('/api/budgets'), (got) => got.body.alerts.length > 0, 'the blocked alert');
    const [alert] = answer.body.alerts;
    expect(alert.kind).to.equal('budget');
    expect(alert.event).to.deep.include({ type: 'budget.threshold', key_id: budgeted.id, threshold_percent: 100, blocked: true });
    const refused = await waitFor(() => vic.get(`/api/usage?key_id=${budgeted.id}`), (got) => got.body.usage.length === 1, 'the refusal');
    expect(refused.body.usage[0]).to.deep.include({ reason: 'TOLLGATE_ERR_BUDGET_EXCEEDED', refused_by: 'budget:key:month' });
  });
});
