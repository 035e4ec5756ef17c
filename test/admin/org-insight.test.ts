/**
 * What an organisation's members read of its spending and change of its keys, by role: usage summed
 * by member, model and day; its sessions and one session's requests; one request in full; a key's
 * limits changed by its member or an owner or admin; its monthly statements for owners and billing
 * members. A member sees only their own, and what a role may not see answers 404, as for an id that
 * does not exist.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSqlite } from '../../src/store/sqlite-driver';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { ApiClient, expectError } from './api-client';
import { addAccount, chargesOf, chatWith, consoleYaml, PASSWORD, passwordHash } from './fixtures';
import '../helpers/test-secret-key';

interface SummaryRow {
  group: string | null;
  label: string | null;
  requests: number;
  cost: string;
}

describe('management API: an organisation read by member (sessions, summaries, requests, statements) and its keys changed', function () {
  this.timeout(30_000);
  let dir: string;
  let file: string;
  let fake: FakeUpstream;
  let tg: TestGateway;
  const as: Record<string, ApiClient> = {};
  const ids: Record<string, string> = {};
  let orgId: string;
  const keys: Record<string, { id: string; secret: string }> = {};

  const session = (key: string, id: string, model = 'gpt-priced') => chatWith(tg.url, { authorization: `Bearer ${key}`, 'x-tollgate-session': id }, model);

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'tollgate-org-insight-'));
    file = path.join(dir, 'tollgate.db');
    await passwordHash();
    fake = await startFakeUpstream();
    const yaml = consoleYaml(fake.url).replace('store: { url: "sqlite::memory:" }', `store: { url: "sqlite:${file}" }`);
    tg = await startTestGateway({ yaml, storeFromConfig: true });
    for (const name of ['alice', 'bob', 'carol', 'bill', 'dave']) ids[name] = (await addAccount(tg.store, name)).id;
    await addAccount(tg.store, 'root', 'admin');
    for (const name of ['alice', 'bob', 'carol', 'bill', 'dave', 'root']) as[name] = await ApiClient.login(tg.url, name, PASSWORD);

    orgId = (await as.alice.post('/api/orgs', { name: 'acme' })).body.organisation.id;
    for (const [name, role] of [['bob', 'member'], ['carol', 'admin'], ['bill', 'billing']] as const) {
      const invited = await as.alice.post(`/api/orgs/${orgId}/invitations`, { invitee: name, role });
      expect((await as[name].post('/api/invitations/accept', { secret: invited.body.secret })).status).to.equal(200);
    }
    expect((await as.root.post(`/api/admin/accounts/${orgId}/credits`, { amount: '10', note: 'team wallet' })).status).to.equal(201);
    // The wallet was made, and credited, in November: that month has closed, so it has a statement.
    const db = openSqlite(file);
    try {
      db.prepare('UPDATE accounts SET created_at = ? WHERE id = ?').run(Date.parse('2026-11-01T09:00:00Z'), orgId);
      db.prepare('UPDATE credits SET created_at = ? WHERE account_id = ?').run(Date.parse('2026-11-20T12:00:00Z'), orgId);
    } finally {
      db.close();
    }

    for (const name of ['bob', 'carol']) {
      const made = await as[name].post(`/api/orgs/${orgId}/keys`, { name: `${name}-key` });
      expect(made.status, made.text).to.equal(201);
      keys[name] = { id: made.body.key.id, secret: made.body.secret };
    }
    // Two requests of bob's in one session, one of carol's in another, one of carol's in none.
    for (const answer of [
      await session(keys.bob.secret, 'bob-s1'),
      await session(keys.bob.secret, 'bob-s1'),
      await session(keys.carol.secret, 'carol-s1'),
      await chatWith(tg.url, { authorization: `Bearer ${keys.carol.secret}` }, 'gpt-priced'),
    ]) expect(answer.status, JSON.stringify(answer.json)).to.equal(200);
    await chargesOf(tg.store, orgId, 4);
  });

  after(async () => {
    await tg?.stop();
    await fake?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('sums usage by member for an owner or admin, and only their own for a member', async () => {
    const byMember = await as.alice.get(`/api/orgs/${orgId}/usage/summary?group_by=member`);
    expect(byMember.status, byMember.text).to.equal(200);
    const rows = byMember.body.rows as SummaryRow[];
    expect(rows.map((row) => `${row.label}:${row.requests}`).sort()).to.deep.equal(['bob:2', 'carol:2']);
    expect(rows.find((row) => row.label === 'bob')?.group).to.equal(ids.bob);
    expect(byMember.body.member_id).to.equal(null);
    const charges = await tg.store.listCharges({ accountId: orgId, limit: 10 });
    const bobCost = charges.filter((charge) => charge.memberAccountId === ids.bob).reduce((sum, charge) => sum + charge.cost, 0n);
    expect(bobCost > 0n, 'the requests were priced').to.equal(true);

    // Bob, a member, reads only his own: by member, by day, by model.
    const own = await as.bob.get(`/api/orgs/${orgId}/usage/summary?group_by=member`);
    expect((own.body.rows as SummaryRow[]).map((row) => `${row.label}:${row.requests}`)).to.deep.equal(['bob:2']);
    expect(own.body.member_id).to.equal(ids.bob);
    const days = (await as.bob.get(`/api/orgs/${orgId}/usage/summary?group_by=day`)).body.rows as SummaryRow[];
    expect(days.reduce((sum, row) => sum + row.requests, 0)).to.equal(2);
    const byModel = (await as.carol.get(`/api/orgs/${orgId}/usage/summary?group_by=model&member_id=${ids.bob}`)).body.rows as SummaryRow[];
    expect(byModel.map((row) => `${row.group}:${row.requests}`)).to.deep.equal(['gpt-priced:2']);
    const byKey = (await as.alice.get(`/api/orgs/${orgId}/usage/summary?group_by=key`)).body.rows as SummaryRow[];
    expect(byKey.map((row) => row.label).sort()).to.deep.equal(['bob-key', 'carol-key']);
    const csv = await as.alice.get(`/api/orgs/${orgId}/usage/summary?group_by=member&format=csv`);
    expect(csv.text.split('\r\n')[0]).to.match(/^group,label,requests,/);

    expectError(await as.bob.get(`/api/orgs/${orgId}/usage/summary?member_id=${ids.carol}`), 404, 'not_found');
    expectError(await as.bill.get(`/api/orgs/${orgId}/usage/summary?member_id=${ids.bob}`), 404, 'not_found');
    expectError(await as.dave.get(`/api/orgs/${orgId}/usage/summary`), 404, 'not_found');
    expectError(await as.alice.get(`/api/orgs/${orgId}/usage/summary?group_by=account`), 400, 'invalid_request');
    // None of it is the members' own account's usage.
    expect((await as.bob.get('/api/usage/summary?group_by=model')).body.rows).to.deep.equal([]);
  });

  it("lists sessions by member, opens one, and answers 404 for a session with none of a member's requests", async () => {
    const all = await as.alice.get(`/api/orgs/${orgId}/usage/sessions`);
    expect(all.status, all.text).to.equal(200);
    expect((all.body.sessions as SummaryRow[]).map((row) => `${row.group}:${row.requests}`).sort()).to.deep.equal(['bob-s1:2', 'carol-s1:1']);
    expect(all.body.session_budget).to.equal(null);
    const bobsByOwner = await as.alice.get(`/api/orgs/${orgId}/usage/sessions?member_id=${ids.bob}`);
    expect((bobsByOwner.body.sessions as SummaryRow[]).map((row) => row.group)).to.deep.equal(['bob-s1']);
    const bobsOwn = await as.bob.get(`/api/orgs/${orgId}/usage/sessions`);
    expect((bobsOwn.body.sessions as SummaryRow[]).map((row) => row.group)).to.deep.equal(['bob-s1']);
    expect(bobsOwn.body.member_id).to.equal(ids.bob);

    const one = await as.bob.get(`/api/orgs/${orgId}/usage/sessions/bob-s1`);
    expect(one.status, one.text).to.equal(200);
    expect(one.body.session.requests).to.equal(2);
    expect(one.body.requests.map((row: { member_name: string; key_name: string }) => `${row.member_name}:${row.key_name}`)).to.deep.equal(['bob:bob-key', 'bob:bob-key']);
    expect((await as.carol.get(`/api/orgs/${orgId}/usage/sessions/carol-s1`)).body.requests).to.have.length(1);
    expect((await as.alice.get(`/api/orgs/${orgId}/usage/sessions/carol-s1`)).status).to.equal(200);

    expectError(await as.bob.get(`/api/orgs/${orgId}/usage/sessions/carol-s1`), 404, 'not_found');
    expectError(await as.alice.get(`/api/orgs/${orgId}/usage/sessions/carol-s1?member_id=${ids.bob}`), 404, 'not_found');
    expectError(await as.bob.get(`/api/orgs/${orgId}/usage/sessions?member_id=${ids.carol}`), 404, 'not_found');
    expectError(await as.dave.get(`/api/orgs/${orgId}/usage/sessions`), 404, 'not_found');
    // The personal account's Sessions never lists them.
    expect((await as.bob.get('/api/usage/sessions')).body.sessions).to.deep.equal([]);
  });

  it("opens one request in full for its member or an owner or admin; another member's is 404", async () => {
    const charges = await tg.store.listCharges({ accountId: orgId, limit: 10 });
    const bobs = charges.find((charge) => charge.memberAccountId === ids.bob)!;
    const carols = charges.find((charge) => charge.memberAccountId === ids.carol)!;
    const own = await as.bob.get(`/api/orgs/${orgId}/usage/requests/${bobs.requestId}`);
    expect(own.status, own.text).to.equal(200);
    expect(own.body.request).to.deep.include({ request_id: bobs.requestId, key_name: 'bob-key', session_id: 'bob-s1' });
    expect((await as.carol.get(`/api/orgs/${orgId}/usage/requests/${bobs.requestId}`)).status).to.equal(200);
    expectError(await as.bob.get(`/api/orgs/${orgId}/usage/requests/${carols.requestId}`), 404, 'not_found');
    expectError(await as.bill.get(`/api/orgs/${orgId}/usage/requests/${bobs.requestId}`), 404, 'not_found');
    expectError(await as.dave.get(`/api/orgs/${orgId}/usage/requests/${bobs.requestId}`), 404, 'not_found');
    // Through the personal route it is nobody's own.
    expectError(await as.bob.get(`/api/usage/requests/${bobs.requestId}`), 404, 'not_found');
  });

  it("lets a key's member, or an owner or admin, change its limits as for a personal key; nobody else", async () => {
    const path = `/api/orgs/${orgId}/keys/${keys.bob.id}`;
    const changed = await as.bob.patch(path, {
      spend_limit: '3',
      models: ['gpt-free'],
      rate_limits: { rpm: 30 },
      budget: { amount: '2', period: 'day', timezone: 'UTC' },
      session_budget: '0.5',
      allowed_networks: ['127.0.0.0/8', '::1/128'],
    });
    expect(changed.status, changed.text).to.equal(200);
    expect(changed.body.key).to.deep.include({ spend_limit: '3', models: ['gpt-free'], session_budget: '0.5', member_account_id: ids.bob, member_name: 'bob' });
    expect(changed.body.key.budget).to.deep.equal({ amount: '2', period: 'day', timezone: 'UTC' });
    const stored = (await tg.store.listKeys({ accountId: orgId })).find((key) => key.id === keys.bob.id)!;
    expect(stored.spendLimit).to.equal(3_000_000_000n);
    expect(stored.allowedNetworks).to.deep.equal(['127.0.0.0/8', '::1/128']);
    // The change binds at once: the model it no longer allows is refused.
    const refused = await session(keys.bob.secret, 'bob-s2');
    expect(refused.status, JSON.stringify(refused.json)).to.equal(403);
    expect((await chatWith(tg.url, { authorization: `Bearer ${keys.bob.secret}` }, 'gpt-free')).status).to.equal(200);

    const byAdmin = await as.carol.patch(path, { models: null });
    expect(byAdmin.status, byAdmin.text).to.equal(200);
    expect(byAdmin.body.key.models).to.equal(null);
    expect((await as.alice.patch(path, { spend_limit: null })).body.key.spend_limit).to.equal(null);
    expectError(await as.bob.patch(`/api/orgs/${orgId}/keys/${keys.carol.id}`, { spend_limit: '1' }), 404, 'not_found');
    expectError(await as.bill.patch(path, { spend_limit: '1' }), 404, 'not_found');
    expectError(await as.dave.patch(path, { spend_limit: '1' }), 404, 'not_found');
    expectError(await as.bob.patch(`/api/keys/${keys.bob.id}`, { spend_limit: '1' }), 404, 'not_found');
    expectError(await as.bob.patch(path, { models: ['no-such-model'] }), 400, 'invalid_request', 'models');

    // An operator's limit on the key is tightened at most, as on a personal key.
    expect((await as.root.patch(`/api/admin/keys/${keys.bob.id}`, { spend_limit: '1' })).status).to.equal(200);
    expectError(await as.bob.patch(path, { spend_limit: '5' }), 400, 'invalid_request', 'spend_limit');
    expect((await as.bob.patch(path, { spend_limit: '0.5' })).body.key.spend_limit).to.equal('0.5');
    const audit = await tg.store.listAudit({ limit: 100 });
    expect(audit.filter((entry) => entry.action === 'key.limits' && entry.target === keys.bob.id).length).to.be.at.least(4);
  });

  it("gives an owner and a billing member the organisation's statements; an admin, a member and an outsider get 404", async () => {
    const listed = await as.alice.get(`/api/orgs/${orgId}/statements`);
    expect(listed.status, listed.text).to.equal(200);
    expect(listed.body.statements.map((statement: { month: string }) => statement.month)).to.deep.equal(['2026-11']);
    const [summary] = listed.body.statements;
    expect(summary.account_id).to.equal(orgId);
    expect(summary.opening.exact).to.equal('0');
    expect(summary.closing.exact).to.equal('10');
    expect((await as.bill.get(`/api/orgs/${orgId}/statements`)).body.statements.map((statement: { id: string }) => statement.id)).to.deep.equal([summary.id]);

    const one = await as.bill.get(`/api/orgs/${orgId}/statements/${summary.id}`);
    expect(one.status, one.text).to.equal(200);
    expect(one.body.statement.account.name).to.equal('acme');
    const html = await as.alice.get(`/api/orgs/${orgId}/statements/${summary.id}?format=html`);
    expect(html.headers.get('content-type')).to.match(/^text\/html/);
    expect(html.text).to.include('acme');
    const csv = await as.bill.get(`/api/orgs/${orgId}/statements/${summary.id}?format=csv`);
    expect(csv.text.split('\r\n')[0]).to.equal('statement,month,section,item,name,requests,amount,currency,shown');

    for (const name of ['carol', 'bob', 'dave']) {
      expectError(await as[name].get(`/api/orgs/${orgId}/statements`), 404, 'not_found');
      expectError(await as[name].get(`/api/orgs/${orgId}/statements/${summary.id}`), 404, 'not_found');
    }
    // Not through the personal route, and not as another organisation's statement.
    expectError(await as.alice.get(`/api/statements/${summary.id}`), 404, 'not_found');
    const other = (await as.alice.post('/api/orgs', { name: 'other' })).body.organisation.id;
    expectError(await as.alice.get(`/api/orgs/${other}/statements/${summary.id}`), 404, 'not_found');
  });
});
