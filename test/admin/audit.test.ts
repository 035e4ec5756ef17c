/**
 * The audit log from the console and the management API: each account-changing action appends one
 * entry with the actor, the surface (a cookie session is `console`, a management token `api`), the
 * target, before and after, and the request id; administrators read it back filtered, as JSON or
 * CSV, and nothing secret is ever in it.
 */
import { expect } from 'chai';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { ApiClient, expectError } from './api-client';
import { addAccount, consoleYaml, PASSWORD, passwordHash } from './fixtures';

describe('management API: audit log', function () {
  this.timeout(30_000);
  let tg: TestGateway;
  let root: ApiClient;
  let ada: ApiClient;
  let adaId: string;
  /** Every secret the tests see; none may appear in the log. */
  const secrets: string[] = [];

  before(async () => {
    await passwordHash();
    tg = await startTestGateway({ yaml: consoleYaml('http://127.0.0.1:9', { console: 'login_failures_per_window: 0, signup: true' }) });
    await addAccount(tg.store, 'root', 'admin');
    adaId = (await addAccount(tg.store, 'ada')).id;
    [root, ada] = await Promise.all([ApiClient.login(tg.url, 'root', PASSWORD), ApiClient.login(tg.url, 'ada', PASSWORD)]);
  });

  after(async () => tg?.stop());

  /** The newest entry of `action`, read through the API as root. */
  async function latest(action: string): Promise<any> {
    const answer = await root.get(`/api/admin/audit?action=${action}&limit=1`);
    expect(answer.status, answer.text).to.equal(200);
    expect(answer.body.entries, `an entry for ${action}`).to.have.length(1);
    return answer.body.entries[0];
  }

  it('records an administrator crediting an account, with the balance before and after and the request id', async () => {
    const answer = await root.post(`/api/admin/accounts/${adaId}/credits`, { amount: '12.5', note: 'invoice 7' });
    expect(answer.status, answer.text).to.equal(201);
    const entry = await latest('account.credit');
    expect(entry).to.deep.include({ actor: 'root', surface: 'console', target: adaId, account_id: adaId, request_id: answer.headers.get('x-request-id') });
    expect(entry.before).to.deep.equal({ balance: '0' });
    expect(entry.after).to.deep.include({ balance: '12.5', amount: '12.5', note: 'invoice 7', credit_id: answer.body.credit.id });
  });

  it('records disabling and enabling an account', async () => {
    expect((await root.patch(`/api/admin/accounts/${adaId}`, { disabled: true })).status).to.equal(200);
    expect(await latest('account.disable')).to.deep.include({ actor: 'root', target: adaId, before: { disabled: false }, after: { disabled: true, sessions_ended: 1 } });
    expect((await root.patch(`/api/admin/accounts/${adaId}`, { disabled: false })).status).to.equal(200);
    expect(await latest('account.enable')).to.deep.include({ before: { disabled: true }, after: { disabled: false, sessions_ended: 0 } });
    ada = await ApiClient.login(tg.url, 'ada', PASSWORD);
  });

  it('records a batch of codes and a redemption, never the code text', async () => {
    const made = await root.post('/api/admin/redemption-codes', { count: 2, amount: '3' });
    expect(made.status, made.text).to.equal(201);
    const [first, second] = made.body.codes;
    secrets.push(first.code, second.code);
    expect(await latest('code.create')).to.deep.include({ actor: 'root', target: null, after: { count: 2, amount: '3', expires_at: null, first_id: first.id, last_id: second.id } });

    const redeemed = await ada.post('/api/topup/redeem', { code: first.code });
    expect(redeemed.status, redeemed.text).to.equal(200);
    const entry = await latest('code.redeem');
    expect(entry).to.deep.include({ actor: 'ada', surface: 'console', target: adaId });
    expect(entry.before).to.deep.equal({ balance: '12.5' });
    expect(entry.after).to.deep.include({ balance: '15.5', amount: '3' });
  });

  it('records creating a key, changing its limits and revoking it, never the key', async () => {
    const { id, secret } = await ada.createKey({ name: 'laptop' });
    secrets.push(secret);
    const created = await latest('key.create');
    expect(created).to.deep.include({ actor: 'ada', target: id, account_id: adaId, before: null });
    expect(created.after).to.deep.include({ name: 'laptop', spend_limit: null, models: null, rate_limits: null });

    expect((await ada.patch(`/api/keys/${id}`, { spend_limit: '2', rate_limits: { rpm: 5 } })).status).to.equal(200);
    expect(await latest('key.limits')).to.deep.include({
      target: id,
      before: { spend_limit: null, models: null, rate_limits: null, budget: null },
      after: { spend_limit: '2', models: null, rate_limits: { rpm: 5 }, budget: null },
    });

    expect((await ada.delete(`/api/keys/${id}`)).status).to.equal(200);
    const revoked = await latest('key.revoke');
    expect(revoked.before).to.deep.equal({ revoked_at: null });
    expect(Date.parse(revoked.after.revoked_at)).to.be.closeTo(Date.now(), 10_000);
  });

  it('records management tokens made and revoked; what a token does is recorded as the api surface', async () => {
    const made = await ada.post('/api/tokens', { name: 'ci', password: PASSWORD });
    expect(made.status).to.equal(201);
    secrets.push(made.body.secret);
    expect(await latest('token.create')).to.deep.include({ actor: 'ada', surface: 'console', target: made.body.token.id, after: { name: 'ci' } });

    const script = ApiClient.bearer(tg.url, made.body.secret);
    const { id } = await script.createKey({ name: 'from-ci' });
    expect(await latest('key.create')).to.deep.include({ actor: 'ada', surface: 'api', target: id });

    expect((await ada.delete(`/api/tokens/${made.body.token.id}`)).status).to.equal(204);
    expect(await latest('token.revoke')).to.deep.include({ actor: 'ada', target: made.body.token.id, before: { name: 'ci' }, after: null });
  });

  it('records a password change with how many other logins it ended, never the password', async () => {
    const other = await ApiClient.login(tg.url, 'ada', PASSWORD);
    const others = (await tg.store.listSessions(adaId, 'session')).length - 1;
    expect(others).to.be.at.least(1);
    const next = 'a brand new passphrase 42';
    secrets.push(next, PASSWORD);
    expect((await ada.put('/api/account/password', { current_password: PASSWORD, new_password: next })).status).to.equal(204);
    expect(await latest('account.password')).to.deep.include({ actor: 'ada', target: adaId, before: null, after: { sessions_ended: others } });
    expect((await other.get('/api/session')).status).to.equal(401);
  });

  it('records an account an administrator creates and one that signs up', async () => {
    const made = await root.post('/api/admin/accounts', { name: 'bea', password: 'another long passphrase' });
    expect(made.status, made.text).to.equal(201);
    secrets.push('another long passphrase');
    expect(await latest('account.create')).to.deep.include({ actor: 'root', target: made.body.account.id, after: { name: 'bea', email: null, role: 'user' } });
    const signedUp = await ApiClient.anonymous(tg.url).post('/api/signup', { name: 'cyd', password: 'yet another passphrase' });
    expect(signedUp.status, signedUp.text).to.equal(201);
    secrets.push('yet another passphrase');
    expect(await latest('account.signup')).to.deep.include({ actor: 'cyd', surface: 'console', target: signedUp.body.account.id, after: { name: 'cyd', email: null, role: 'user' } });
  });

  it('filters by actor, target, action and date, and exports CSV', async () => {
    const byAda = (await root.get('/api/admin/audit?actor=ada')).body.entries as any[];
    expect(byAda.length).to.be.at.least(5);
    expect(byAda.every((entry) => entry.actor === 'ada')).to.equal(true);
    const onAda = (await root.get(`/api/admin/audit?target=${adaId}`)).body.entries as any[];
    expect(onAda.map((entry) => entry.action)).to.include.members(['account.credit', 'account.disable', 'code.redeem', 'key.create', 'account.password']);
    const today = new Date().toISOString().slice(0, 10);
    expect((await root.get(`/api/admin/audit?since=${today}&until=${today}`)).body.entries.length).to.equal((await root.get('/api/admin/audit')).body.entries.length);
    expect((await root.get('/api/admin/audit?until=2000-01-01')).body.entries).to.deep.equal([]);

    const csv = await root.get(`/api/admin/audit?format=csv&target=${adaId}&action=account.disable`);
    expect(csv.status).to.equal(200);
    expect(csv.headers.get('content-type')).to.match(/^text\/csv/);
    const lines = csv.text.trim().split('\r\n');
    expect(lines[0]).to.equal('id,at,actor,surface,action,target,account_id,before,after,request_id');
    expect(lines).to.have.length(2);
    expect(lines[1]).to.include(',root,console,account.disable,').and.include('"{""disabled"":false}","{""disabled"":true,""sessions_ended"":1}"');
  });

  it('never holds a secret', async () => {
    const all = (await root.get('/api/admin/audit?format=csv')).text;
    for (const secret of secrets) expect(all).to.not.include(secret);
    expect(all).to.not.match(/scrypt|\$s0|sk-[A-Za-z0-9]{20,}|tgm_/);
  });

  it('is for administrators only, and refuses an unknown action in its own error shape', async () => {
    expectError(await ada.get('/api/admin/audit'), 403, 'forbidden');
    expectError(await root.get('/api/admin/audit?action=key.steal'), 400, 'invalid_request', 'action');
  });
});
