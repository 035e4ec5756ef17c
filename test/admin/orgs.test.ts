/**
 * Organisations through the management API on one instance: make one, invite by name and by e-mail,
 * accept once (only the invitee), keys of members that spend the organisation's balance and are
 * charged to the member, what each role may see (404 otherwise), the last owner kept, and a removed
 * member's key refused at once.
 */
import { expect } from 'chai';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { ApiClient, expectError } from './api-client';
import { addAccount, chargesOf, chat, consoleYaml, PASSWORD, passwordHash, waitFor } from './fixtures';

describe('management API: organisations', function () {
  this.timeout(30_000);
  let fake: FakeUpstream;
  let tg: TestGateway;
  let alice: ApiClient;
  let bob: ApiClient;
  let carol: ApiClient;
  let dave: ApiClient;
  let admin: ApiClient;
  let orgId: string;
  const ids: Record<string, string> = {};

  before(async () => {
    await passwordHash();
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: consoleYaml(fake.url) });
    for (const [name, email] of [['alice', null], ['bob', null], ['carol', 'carol@example.com'], ['dave', null]] as const) ids[name] = (await addAccount(tg.store, name, 'user', email)).id;
    await addAccount(tg.store, 'root', 'admin');
    [alice, bob, carol, dave, admin] = await Promise.all(['alice', 'bob', 'carol', 'dave', 'root'].map((name) => ApiClient.login(tg.url, name, PASSWORD)));
  });

  after(async () => {
    await tg?.stop();
    await fake?.close();
  });

  it('makes an organisation whose owner is its maker, and lists it only for its members', async () => {
    const made = await alice.post('/api/orgs', { name: 'acme' });
    expect(made.status, made.text).to.equal(201);
    orgId = made.body.organisation.id;
    expect(made.body.organisation).to.deep.include({ name: 'acme', role: 'owner', balance: '0' });
    expect((await alice.get('/api/orgs')).body.organisations.map((org: { id: string }) => org.id)).to.deep.equal([orgId]);
    expect((await dave.get('/api/orgs')).body.organisations).to.deep.equal([]);
    expectError(await dave.get(`/api/orgs/${orgId}`), 404, 'not_found');
    expectError(await dave.get(`/api/orgs/${orgId}/members`), 404, 'not_found');
    expectError(await alice.post('/api/orgs', { name: 'bob' }), 409, 'conflict', 'name');
    // Nobody signs in to an organisation.
    expect((await ApiClient.tryLogin(tg.url, 'acme', PASSWORD)).answer.status).to.equal(401);
  });

  it('invites by name and by e-mail; only the invitee accepts, once', async () => {
    const forBob = await alice.post(`/api/orgs/${orgId}/invitations`, { invitee: 'bob' });
    expect(forBob.status, forBob.text).to.equal(201);
    expect(forBob.body.secret).to.match(/^tgi_/);
    expect(forBob.body.link).to.equal(`/console/join#${forBob.body.secret}`);
    expect(forBob.body.invitation).to.deep.include({ invitee: 'bob', role: 'member', status: 'open' });
    expect(Date.parse(forBob.body.invitation.expires_at) - Date.now()).to.be.closeTo(7 * 86_400_000, 60_000);
    const forCarol = await alice.post(`/api/orgs/${orgId}/invitations`, { invitee: 'Carol@Example.com', role: 'admin' });
    expect(forCarol.status).to.equal(201);
    expectError(await dave.post('/api/invitations/accept', { secret: forBob.body.secret }), 404, 'not_found');
    expectError(await bob.post('/api/invitations/accept', { secret: 'tgi_' + 'A'.repeat(43) }), 404, 'not_found');
    const accepted = await bob.post('/api/invitations/accept', { secret: forBob.body.secret });
    expect(accepted.status, accepted.text).to.equal(200);
    expect(accepted.body.member).to.deep.include({ account_id: ids.bob, role: 'member' });
    expectError(await bob.post('/api/invitations/accept', { secret: forBob.body.secret }), 410, 'gone');
    expect((await carol.post('/api/invitations/accept', { secret: forCarol.body.secret })).status).to.equal(200);
    // A revoked invitation is not accepted.
    const forDave = await alice.post(`/api/orgs/${orgId}/invitations`, { invitee: 'dave' });
    expect((await alice.delete(`/api/orgs/${orgId}/invitations/${forDave.body.invitation.id}`)).body.invitation.status).to.equal('revoked');
    expectError(await dave.post('/api/invitations/accept', { secret: forDave.body.secret }), 410, 'gone');
    const listed = await alice.get(`/api/orgs/${orgId}/invitations`);
    expect(listed.body.invitations.map((invitation: { status: string }) => invitation.status).sort()).to.deep.equal(['accepted', 'accepted', 'revoked']);
  });

  it('lets each role do what it may: a member neither invites nor reads invitations; an admin makes no owner', async () => {
    expectError(await bob.post(`/api/orgs/${orgId}/invitations`, { invitee: 'dave' }), 404, 'not_found');
    expectError(await bob.get(`/api/orgs/${orgId}/invitations`), 404, 'not_found');
    expectError(await bob.patch(`/api/orgs/${orgId}/members/${ids.carol}`, { role: 'member' }), 404, 'not_found');
    expectError(await carol.patch(`/api/orgs/${orgId}/members/${ids.bob}`, { role: 'owner' }), 403, 'forbidden');
    expectError(await carol.patch(`/api/orgs/${orgId}/members/${ids.alice}`, { role: 'member' }), 403, 'forbidden');
    expectError(await alice.patch(`/api/orgs/${orgId}/members/${ids.alice}`, { role: 'admin' }), 409, 'conflict', 'role');
    expectError(await alice.delete(`/api/orgs/${orgId}/members/${ids.alice}`), 409, 'conflict');
    const members = await bob.get(`/api/orgs/${orgId}/members`);
    expect(members.body.members.map((member: { name: string; role: string }) => `${member.name}:${member.role}`)).to.deep.equal(['alice:owner', 'bob:member', 'carol:admin']);
    expect(members.body.members.find((member: { name: string }) => member.name === 'carol').limits, "another member's limits").to.equal(null);
    const limited = await carol.patch(`/api/orgs/${orgId}/members/${ids.bob}`, { budget: { amount: '5', period: 'day', timezone: 'UTC' }, models: ['gpt-priced', 'gpt-free'] });
    expect(limited.status, limited.text).to.equal(200);
    expect(limited.body.member.limits).to.deep.equal({ budget: { amount: '5', period: 'day', timezone: 'UTC' }, models: ['gpt-priced', 'gpt-free'], rate_limits: null });
    expect((await admin.get('/api/admin/orgs')).body.organisations).to.deep.equal([{ ...(await alice.get(`/api/orgs/${orgId}`)).body.organisation, role: null, members: 3 }]);
    expect((await admin.get(`/api/admin/orgs/${orgId}/members`)).body.members).to.have.length(3);
    expectError(await admin.get(`/api/admin/orgs/${ids.alice}/members`), 404, 'not_found');
    expectError(await alice.get('/api/admin/orgs'), 403, 'forbidden');
  });

  it("spends the organisation's balance through a member's key, charged to the member; usage reads by role", async () => {
    const made = await bob.post(`/api/orgs/${orgId}/keys`, { name: 'work' });
    expect(made.status, made.text).to.equal(201);
    expect(made.body.key.member_account_id).to.equal(ids.bob);
    expect(made.body.key.member_name).to.equal('bob');
    expect((await bob.get('/api/keys')).body.keys, 'not among his own keys').to.deep.equal([]);
    const refused = await chat(tg.url, made.body.secret, 'gpt-priced');
    expect(refused.status, 'the organisation has no money yet').to.equal(402);
    expect((await admin.post(`/api/admin/accounts/${orgId}/credits`, { amount: '10', note: 'team wallet' })).status).to.equal(201);
    const served = await chat(tg.url, made.body.secret, 'gpt-priced');
    expect(served.status, JSON.stringify(served.json)).to.equal(200);
    const [charge] = await chargesOf(tg.store, orgId, 1);
    expect(charge.memberAccountId).to.equal(ids.bob);
    expect(charge.accountId).to.equal(orgId);

    const own = await bob.get(`/api/orgs/${orgId}/usage`);
    expect(own.status, own.text).to.equal(200);
    expect(own.body.member_id).to.equal(ids.bob);
    expect(own.body.charges.map((row: { member_name: string }) => row.member_name)).to.deep.equal(['bob']);
    expectError(await bob.get(`/api/orgs/${orgId}/usage?member_id=${ids.carol}`), 404, 'not_found');
    expectError(await dave.get(`/api/orgs/${orgId}/usage?member_id=${ids.bob}`), 404, 'not_found');
    const byAdmin = await carol.get(`/api/orgs/${orgId}/usage?member_id=${ids.bob}`);
    expect(byAdmin.body.totals.requests).to.equal(1);
    expect((await carol.get(`/api/orgs/${orgId}/usage?member_id=${ids.carol}`)).body.totals.requests).to.equal(0);
    // The refused request (402, before any money) reads by member too: its row records bob.
    const withRefusal = await waitFor(() => carol.get(`/api/orgs/${orgId}/usage?member_id=${ids.bob}`), (answer) => answer.body.totals.refused === 1, "bob's refusal recorded");
    expect(withRefusal.body.refusals.map((row: Record<string, unknown>) => [row.status, row.reason, row.refused_by, row.member_id, row.member_name])).to.deep.equal([
      [402, 'TOLLGATE_ERR_INSUFFICIENT_BALANCE', 'account', ids.bob, 'bob'],
    ]);
    expect((await bob.get(`/api/orgs/${orgId}/usage`)).body.refusals).to.have.length(1);
    const carols = (await carol.get(`/api/orgs/${orgId}/usage?member_id=${ids.carol}`)).body;
    expect([carols.totals.refused, carols.refusals]).to.deep.equal([0, []]);
    expect((await carol.get(`/api/orgs/${orgId}/keys`)).body.keys.map((key: { id: string; member_name: string }) => `${key.id}:${key.member_name}`)).to.deep.equal([`${made.body.key.id}:bob`]);
    expect((await alice.get(`/api/orgs/${orgId}/keys`)).body.keys).to.have.length(1);
  });

  it("ends a removed member's keys in the organisation at once", async () => {
    const made = await bob.post(`/api/orgs/${orgId}/keys`, { name: 'second' });
    expect((await chat(tg.url, made.body.secret)).status).to.equal(200);
    const removed = await carol.delete(`/api/orgs/${orgId}/members/${ids.bob}`);
    expect(removed.status, removed.text).to.equal(200);
    expect((await chat(tg.url, made.body.secret)).status).to.equal(401);
    expectError(await bob.get(`/api/orgs/${orgId}`), 404, 'not_found');
    const audit = await tg.store.listAudit({ limit: 100 });
    expect(audit.map((entry) => entry.action)).to.include.members(['org.create', 'org.invite', 'org.join', 'org.member_limits', 'org.remove', 'org.invitation_revoke']);
  });

  it("binds every key of an account to the operator's limits on it, a playground key and one made later included", async () => {
    const before = await dave.createKey({ name: 'before' });
    const set = await admin.patch(`/api/admin/accounts/${ids.dave}/limits`, { models: ['gpt-free'], rate_limits: { rpm: 100 } });
    expect(set.status, set.text).to.equal(200);
    expect(set.body.limits).to.deep.equal({ models: ['gpt-free'], rate_limits: { rpm: 100 } });
    const playground = await dave.post('/api/playground/key', {});
    const after = await dave.createKey({ name: 'after' });
    for (const secret of [before.secret, playground.body.secret, after.secret]) {
      const refused = await chat(tg.url, secret, 'gpt-priced');
      expect(refused.status).to.equal(403);
      expect(refused.json.error.message).to.include("The operator's limits on this account do not allow the model 'gpt-priced'");
      expect((await chat(tg.url, secret)).status).to.equal(200);
    }
    expect((await admin.patch(`/api/admin/accounts/${ids.dave}/limits`, { models: null })).body.limits).to.deep.equal({ models: null, rate_limits: { rpm: 100 } });
    expect((await chat(tg.url, after.secret, 'gpt-priced')).status, 'no money, but the model is allowed again').to.equal(402);
    expectError(await alice.patch(`/api/admin/accounts/${ids.dave}/limits`, { models: null }), 403, 'forbidden');
  });
});
