/**
 * An administrator sets the operator's limits on another account's key from the management API:
 * they hold against the owner's PATCH (tighten, never loosen or clear) and are enforced on /v1;
 * a user cannot reach the route, not even for their own key.
 */
import { expect } from 'chai';
import { unitsToNano } from '../../src/billing/money';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { ApiClient, expectError } from './api-client';
import { addAccount, chatWith, consoleYaml, PASSWORD, passwordHash } from './fixtures';

describe('admin: operator limits on a key', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let tg: TestGateway;
  let admin: ApiClient;
  let owner: ApiClient;
  let ownerId: string;

  before(async () => {
    await passwordHash();
    upstream = await startFakeUpstream();
    tg = await startTestGateway({
      yaml: consoleYaml(upstream.url, { server: 'trust_proxy: true, trusted_proxy_hops: 1', plugins: '  rate-limit: { per_key: { rpm: 1000 } }' }),
    });
    await addAccount(tg.store, 'opadmin', 'admin');
    ownerId = (await addAccount(tg.store, 'keyowner')).id;
    await tg.store.credit({ accountId: ownerId, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: null });
    admin = await ApiClient.login(tg.url, 'opadmin', PASSWORD);
    owner = await ApiClient.login(tg.url, 'keyowner', PASSWORD);
  });

  after(async () => {
    await tg?.stop();
    await upstream?.close();
  });

  const from = (key: string, address: string, model = 'gpt-free') => chatWith(tg.url, { authorization: `Bearer ${key}`, 'x-forwarded-for': address }, model);

  it('set by an admin, they survive the owner clearing or loosening them and are enforced on /v1', async () => {
    const { id, secret } = await owner.createKey({ name: 'operated' });
    const listed = await admin.get(`/api/admin/accounts/${ownerId}/keys`);
    expect(listed.status, listed.text).to.equal(200);
    expect(listed.body.keys.map((key: { id: string }) => key.id)).to.include(id);
    expect(listed.text).to.not.include(secret);

    const set = await admin.patch(`/api/admin/keys/${id}`, {
      models: ['gpt-free', 'gpt-priced'],
      rate_limits: { rpm: 2 },
      spend_limit: '1',
      allowed_networks: ['10.0.0.0/8'],
      budget: { amount: '0.000001', period: 'day', timezone: 'UTC' },
    });
    expect(set.status, set.text).to.equal(200);
    expect(set.body.key.operator_limits).to.deep.equal({
      spend_limit: '1',
      models: ['gpt-free', 'gpt-priced'],
      rate_limits: { rpm: 2 },
      allowed_networks: ['10.0.0.0/8'],
      budget: { amount: '0.000001', period: 'day', timezone: 'UTC' },
      session_budget: null,
    });
    expect(set.body.key).to.deep.include({ spend_limit: '1', models: ['gpt-free', 'gpt-priced'], rate_limits: { rpm: 2 }, allowed_networks: null });
    const [entry] = await tg.store.listAudit({ target: id, action: 'key.limits' });
    expect(entry).to.deep.include({ actor: 'opadmin', surface: 'console' });
    expect(entry.after).to.deep.include({ operator_limits: { spend_limit: '1', models: ['gpt-free', 'gpt-priced'], rate_limits: { rpm: 2 }, allowed_networks: ['10.0.0.0/8'], budget: { amount: '0.000001', period: 'day', timezone: 'UTC' } } });

    // The owner clears everything: the operator's limits stay.
    const cleared = await owner.patch(`/api/keys/${id}`, { models: null, spend_limit: null, rate_limits: null, allowed_networks: null, budget: null });
    expect(cleared.status, cleared.text).to.equal(200);
    // A looser value is refused, saying both figures, and changes nothing: never "saved" and kept the operator's.
    const looser: [Record<string, unknown>, string, string][] = [
      [{ spend_limit: '50' }, 'spend_limit', "The spend limit is capped at the operator's 1: 50 would be looser."],
      [{ rate_limits: { rpm: 100 } }, 'rate_limits', "The rpm limit is capped at the operator's 2: 100 would be looser."],
      [{ budget: { amount: '9', period: 'day' } }, 'budget', "The budget per day is capped at the operator's 0.000001: 9 would be looser."],
      [{ models: ['gpt-free', 'claude-priced'] }, 'models', 'The operator allows this key only gpt-free, gpt-priced: claude-priced would be looser.'],
    ];
    for (const [body, field, message] of looser) {
      const refused = await owner.patch(`/api/keys/${id}`, body);
      expectError(refused, 400, 'invalid_request', field);
      expect(refused.body.error.message).to.contain(message);
    }
    const kept = (await owner.get('/api/keys')).body.keys.find((listed: { id: string }) => listed.id === id);
    expect(kept).to.deep.include({ spend_limit: '1', models: ['gpt-free', 'gpt-priced'], rate_limits: { rpm: 2 }, budget: { amount: '0.000001', period: 'day', timezone: 'UTC' } });
    expect(kept.operator_limits).to.deep.equal(set.body.key.operator_limits);
    // A tighter one is taken as the owner's own.
    const tightened = await owner.patch(`/api/keys/${id}`, { models: ['gpt-free'] });
    expect(tightened.status, tightened.text).to.equal(200);
    expect(tightened.body.key.models).to.deep.equal(['gpt-free']);
    // A budget over another period is neither tighter nor looser: refused, not silently replaced.
    expectError(await owner.patch(`/api/keys/${id}`, { budget: { amount: '0.0000001', period: 'month' } }), 400, 'invalid_request', 'budget');
    // The owner may put the models back to the operator's list.
    expect((await owner.patch(`/api/keys/${id}`, { models: null })).body.key.models).to.deep.equal(['gpt-free', 'gpt-priced']);

    // Enforced: the networks, the models, the budget, the rate.
    const outside = await from(secret, '192.0.2.10');
    expect(outside.status).to.equal(403);
    expect(outside.json.error.code).to.equal('ip_not_allowed');
    const otherModel = await from(secret, '10.0.0.1', 'claude-priced');
    expect(otherModel.status).to.equal(403);
    expect(otherModel.json.error.code).to.equal('model_not_allowed');
    // Refused networks and models take no slot of the two a minute: both are taken here, the third is not.
    expect((await from(secret, '10.0.0.1')).status).to.equal(200);
    expect((await from(secret, '10.0.0.1')).status).to.equal(200);
    expect((await from(secret, '10.0.0.1')).status).to.equal(429);
  });

  it("an admin's budget on a key is enforced on /v1 and the owner can only lower it", async () => {
    const { id, secret } = await owner.createKey({ name: 'budgeted' });
    const set = await admin.patch(`/api/admin/keys/${id}`, { budget: { amount: '0.000001', period: 'day', timezone: 'UTC' } });
    expect(set.status, set.text).to.equal(200);
    expect((await owner.patch(`/api/keys/${id}`, { budget: null })).body.key.budget).to.deep.equal({ amount: '0.000001', period: 'day', timezone: 'UTC' });
    const overBudget = await from(secret, '10.0.0.1', 'gpt-priced');
    expect(overBudget.status).to.equal(402);
    expect(overBudget.json.error.code).to.equal('budget_exceeded');
    const lowered = await owner.patch(`/api/keys/${id}`, { budget: { amount: '0.0000005', period: 'day' } });
    expect(lowered.body.key.budget).to.deep.equal({ amount: '0.0000005', period: 'day', timezone: 'UTC' });
    // The operator lifts theirs: the owner's own lower budget stays.
    const lifted = await admin.patch(`/api/admin/keys/${id}`, { budget: null });
    expect(lifted.body.key).to.deep.include({ operator_limits: null, budget: { amount: '0.0000005', period: 'day', timezone: 'UTC' } });
  });

  it("an admin's session budget on a key is enforced per session, the owner can only lower it, and an account's is set too", async () => {
    const { id, secret } = await owner.createKey({ name: 'session-capped' });
    const set = await admin.patch(`/api/admin/keys/${id}`, { session_budget: '0.000001' });
    expect(set.status, set.text).to.equal(200);
    expect(set.body.key).to.deep.include({ session_budget: '0.000001' });
    expect(set.body.key.operator_limits).to.deep.include({ session_budget: '0.000001' });
    const [entry] = await tg.store.listAudit({ target: id, action: 'key.limits' });
    expect(entry.after).to.deep.include({ session_budget: '0.000001', operator_limits: { session_budget: '0.000001' } });
    // The owner cannot clear it (the operator's stays) nor raise it (refused); lowering it is theirs.
    expect((await owner.patch(`/api/keys/${id}`, { session_budget: null })).body.key.session_budget).to.equal('0.000001');
    const raised = await owner.patch(`/api/keys/${id}`, { session_budget: '5' });
    expectError(raised, 400, 'invalid_request', 'session_budget');
    expect(raised.body.error.message).to.contain("The session budget is capped at the operator's 0.000001: 5 would be looser.");
    expect((await owner.patch(`/api/keys/${id}`, { session_budget: '0.0000005' })).body.key.session_budget).to.equal('0.0000005');
    expectError(await owner.patch(`/api/keys/${id}`, { session_budget: '-1' }), 400, 'invalid_request', 'session_budget');
    // Enforced for a request that names a session; one that names none is served.
    const inSession = await chatWith(tg.url, { authorization: `Bearer ${secret}`, 'x-forwarded-for': '10.0.0.1', 'x-tollgate-session': 'api-session' }, 'gpt-priced');
    expect(inSession.status).to.equal(402);
    expect(inSession.json.error.code).to.equal('session_budget_exceeded');
    expect((await from(secret, '10.0.0.1', 'gpt-priced')).status).to.equal(200);
    // The operator lifts theirs: the owner's own lower one stays.
    const lifted = await admin.patch(`/api/admin/keys/${id}`, { session_budget: null });
    expect(lifted.body.key).to.deep.include({ operator_limits: null, session_budget: '0.0000005' });

    expectError(await owner.patch(`/api/admin/accounts/${ownerId}`, { session_budget: '1' }), 403, 'forbidden');
    const account = await admin.patch(`/api/admin/accounts/${ownerId}`, { session_budget: '2.5' });
    expect(account.status, account.text).to.equal(200);
    expect(account.body.account).to.deep.include({ session_budget: '2.5', disabled: false });
    expect((await tg.store.findAccountById(ownerId))!.sessionBudget).to.equal(2_500_000_000n);
    const audited = await tg.store.listAudit({ target: ownerId, action: 'account.budget' });
    expect(audited[0]).to.deep.include({ before: { session_budget: null }, after: { session_budget: '2.5' } });
    // The console's Sessions page reads each session's spend against the account's cap.
    const sessions = await owner.get('/api/usage/sessions');
    expect(sessions.body.session_budget).to.equal('2.5');
    expect((await admin.patch(`/api/admin/accounts/${ownerId}`, { session_budget: null })).body.account.session_budget).to.equal(null);
    expect((await owner.get('/api/usage/sessions')).body.session_budget).to.equal(null);
  });

  it("removing an operator's limit (null) gives the owner's own tighter choice back; a field left out is kept", async () => {
    const { id } = await owner.createKey({ name: 'own-choice', rate_limits: { rpm: 5, tpm: 1000 } });
    const set = await admin.patch(`/api/admin/keys/${id}`, { rate_limits: { rpm: 3, tpm: 5000 }, spend_limit: '2' });
    // Enforced: the tighter of each; the owner's looser rpm gives way to the operator's.
    expect(set.body.key.rate_limits).to.deep.equal({ rpm: 3, tpm: 1000 });
    const removed = await admin.patch(`/api/admin/keys/${id}`, { rate_limits: null });
    expect(removed.status, removed.text).to.equal(200);
    expect(removed.body.key.operator_limits).to.deep.include({ rate_limits: null, spend_limit: '2' });
    expect(removed.body.key).to.deep.include({ rate_limits: { tpm: 1000 }, spend_limit: '2' });
    const none = await admin.patch(`/api/admin/keys/${id}`, { spend_limit: null });
    expect(none.body.key.operator_limits).to.equal(null);
    expect(none.body.key.spend_limit).to.equal(null);
  });

  it('refuses bad limits with the field named, and an unknown key with 404', async () => {
    const { id } = await owner.createKey({ name: 'bad-input' });
    expectError(await admin.patch(`/api/admin/keys/${id}`, { models: ['no-such-model'] }), 400, 'invalid_request', 'models');
    expectError(await admin.patch(`/api/admin/keys/${id}`, { allowed_networks: ['10.0.0.0/33'] }), 400, 'invalid_request', 'allowed_networks');
    expectError(await admin.patch(`/api/admin/keys/${id}`, { budget: { amount: '1', period: 'fortnight' } }), 400, 'invalid_request', 'budget.period');
    expectError(await admin.patch('/api/admin/keys/key_0000000000000000', { spend_limit: '1' }), 404, 'not_found');
    expectError(await admin.get('/api/admin/accounts/acc_0000000000000000/keys'), 404, 'not_found');
  });

  it('answers a user 403, even for their own key, and changes nothing', async () => {
    const { id } = await owner.createKey({ name: 'mine', rate_limits: { rpm: 1 } });
    expectError(await owner.patch(`/api/admin/keys/${id}`, { rate_limits: null }), 403, 'forbidden');
    expectError(await owner.get(`/api/admin/accounts/${ownerId}/keys`), 403, 'forbidden');
    const key = (await tg.store.listKeys({ accountId: ownerId })).find((candidate) => candidate.id === id)!;
    expect(key).to.deep.include({ rateLimits: { rpm: 1 }, operatorLimits: null });
  });
});
