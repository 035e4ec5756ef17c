/**
 * Credentials that end: a management token needs the password to mint, carries an expiry and a last
 * use, and dies with every other session of its account when the password changes (in the console or
 * by the operator), when the account is disabled (console or CLI); names are unique whatever their
 * case, and the login limiter counts the account, not the spelling of its name.
 */
import { expect } from 'chai';
import { setPasswordCommand } from '../../src/cli/account-console';
import { setAccountDisabledCommand } from '../../src/cli/account-list';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { ApiClient, expectError, send } from './api-client';
import { addAccount, consoleYaml, PASSWORD, passwordHash } from './fixtures';

const DAY_MS = 86_400_000;

describe('management API: credentials that end', function () {
  this.timeout(120_000);
  let tg: TestGateway;
  let root: ApiClient;

  before(async () => {
    await passwordHash();
    tg = await startTestGateway({ yaml: consoleYaml('http://127.0.0.1:9', { console: 'signup: true, login_failures_per_window: 0' }) });
    await addAccount(tg.store, 'root', 'admin');
    root = await ApiClient.login(tg.url, 'root', PASSWORD);
  });

  after(async () => tg?.stop());

  /** A signed-in console session and a management token of a new account. */
  async function signedIn(name: string): Promise<{ id: string; browser: ApiClient; token: ApiClient }> {
    const { id } = await addAccount(tg.store, name);
    const browser = await ApiClient.login(tg.url, name, PASSWORD);
    const minted = await browser.post('/api/tokens', { name: 'script', password: PASSWORD });
    expect(minted.status, minted.text).to.equal(201);
    const token = ApiClient.bearer(tg.url, minted.body.secret);
    expect((await token.get('/api/account')).status).to.equal(200);
    return { id, browser, token };
  }

  it('mints a token only with the password, for 90 days unless told otherwise, and records its last use', async () => {
    await addAccount(tg.store, 'minter');
    const browser = await ApiClient.login(tg.url, 'minter', PASSWORD);
    expectError(await browser.post('/api/tokens', { name: 'no-password' }), 400, 'invalid_request', 'password');
    expectError(await browser.post('/api/tokens', { name: 'wrong', password: 'not the password at all' }), 400, 'invalid_request', 'password');
    expectError(await browser.post('/api/tokens', { password: PASSWORD, expires_in_days: 0 }), 400, 'invalid_request', 'expires_in_days');
    expectError(await browser.post('/api/tokens', { password: PASSWORD, expires_in_days: 400 }), 400, 'invalid_request', 'expires_in_days');
    expect((await browser.get('/api/tokens')).body.tokens).to.deep.equal([]);

    const standard = await browser.post('/api/tokens', { name: 'standard', password: PASSWORD });
    expect(standard.status, standard.text).to.equal(201);
    expect(Date.parse(standard.body.token.expires_at) - Date.now()).to.be.within(90 * DAY_MS - 60_000, 90 * DAY_MS);
    expect(standard.body.token.last_used_at).to.equal(null);
    const week = await browser.post('/api/tokens', { name: 'week', password: PASSWORD, expires_in_days: 7 });
    expect(Date.parse(week.body.token.expires_at) - Date.now()).to.be.within(7 * DAY_MS - 60_000, 7 * DAY_MS);

    expect((await ApiClient.bearer(tg.url, standard.body.secret).get('/api/account')).status).to.equal(200);
    // The last use is written off the request's path.
    let listed: { id: string; last_used_at: string | null }[] = [];
    for (let i = 0; i < 50 && listed.find((token) => token.id === standard.body.token.id)?.last_used_at == null; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      listed = (await browser.get('/api/tokens')).body.tokens;
    }
    const used = listed.find((token) => token.id === standard.body.token.id)!;
    expect(Date.parse(used.last_used_at!)).to.be.closeTo(Date.now(), 10_000);
  });

  it('a password change in the console ends every token and every other session: 401', async () => {
    const { browser, token } = await signedIn('changer');
    const other = await ApiClient.login(tg.url, 'changer', PASSWORD);
    const changed = await browser.put('/api/account/password', { current_password: PASSWORD, new_password: 'a brand new password' });
    expect(changed.status, changed.text).to.equal(204);
    expectError(await token.get('/api/account'), 401, 'unauthenticated');
    expectError(await other.get('/api/account'), 401, 'unauthenticated');
    expect((await browser.get('/api/account')).status, 'the session that changed it stays').to.equal(200);
  });

  it("an operator's password reset (tollgate account password) ends every session and token: 401", async () => {
    const { browser, token } = await signedIn('reset-me');
    const lines: string[] = [];
    const reset = await setPasswordCommand(tg.store, { name: 'reset-me', password: 'an operator chose this' }, (line) => lines.push(line));
    expectError(await token.get('/api/account'), 401, 'unauthenticated');
    expectError(await browser.get('/api/account'), 401, 'unauthenticated');
    expect(reset.ended).to.equal(2);
    expect(lines.join('\n')).to.include('ended 2 console sessions and tokens');
  });

  it('disabling an account (admin API) ends its sessions and tokens: 401, and enabling it restores none', async () => {
    const { id, browser, token } = await signedIn('disable-me');
    const disabled = await root.patch(`/api/admin/accounts/${id}`, { disabled: true });
    expect(disabled.status, disabled.text).to.equal(200);
    expectError(await token.get('/api/account'), 401, 'unauthenticated');
    expectError(await browser.get('/api/account'), 401, 'unauthenticated');
    expect((await root.patch(`/api/admin/accounts/${id}`, { disabled: false })).status).to.equal(200);
    expectError(await token.get('/api/account'), 401, 'unauthenticated');
    const entry = (await tg.store.listAudit({ target: id, action: 'account.disable' }))[0];
    expect(entry.after).to.deep.equal({ disabled: true, sessions_ended: 2 });
  });

  it('disabling an account with the CLI ends its sessions and tokens: 401, and enabling it restores none', async () => {
    const { browser, token } = await signedIn('cli-disabled');
    const disabled = await setAccountDisabledCommand(tg.store, 'cli-disabled', true, () => undefined);
    expectError(await token.get('/api/account'), 401, 'unauthenticated');
    expectError(await browser.get('/api/account'), 401, 'unauthenticated');
    expect(disabled.ended).to.equal(2);
    // Enabling it again restores none of them.
    await setAccountDisabledCommand(tg.store, 'cli-disabled', false, () => undefined);
    expectError(await token.get('/api/account'), 401, 'unauthenticated');
    expectError(await browser.get('/api/account'), 401, 'unauthenticated');
  });

  it('refuses the sign-up of Carol when carol exists (409 on the name)', async () => {
    await addAccount(tg.store, 'carol');
    const answer = await send(tg.url, 'POST', '/api/signup', { body: { name: 'Carol', password: 'a long enough password' } });
    expectError(answer, 409, 'conflict', 'name');
    expect(await tg.store.countAccounts()).to.be.greaterThan(0);
    expect((await tg.store.findAccountByName('CAROL'))?.name).to.equal('carol');
  });

  it('keeps at most 20 console sessions per account, ending the oldest', async () => {
    const { id } = await addAccount(tg.store, 'many-tabs');
    const first = await ApiClient.login(tg.url, 'many-tabs', PASSWORD);
    // 19 more, made directly (each login costs a password hash): then one more login.
    const later = new Date(Date.now() + 3_600_000);
    for (let i = 0; i < 19; i += 1) {
      await tg.store.createSession({ accountId: id, hash: Buffer.alloc(32, i + 1), kind: 'session', name: null, expiresAt: later });
    }
    expect((await first.get('/api/account')).status).to.equal(200);
    const last = await ApiClient.login(tg.url, 'many-tabs', PASSWORD);
    expect(await tg.store.listSessions(id, 'session')).to.have.length(20);
    expectError(await first.get('/api/account'), 401, 'unauthenticated');
    expect((await last.get('/api/account')).status).to.equal(200);
  });
});

describe('management API: the login limiter counts the account, whatever its spelling', function () {
  this.timeout(120_000);
  let tg: TestGateway;

  before(async () => {
    await passwordHash();
    tg = await startTestGateway({
      yaml: consoleYaml('http://127.0.0.1:9', { server: 'trust_proxy: true', console: 'signup: true, login_failures_per_window: 10' }),
    });
    await addAccount(tg.store, 'carol', 'user', 'carol@example.com');
  });

  after(async () => tg?.stop());

  it('9 wrong passwords for carol, a good login as CAROL, one wrong by e-mail: the next try is refused (429)', async () => {
    const login = (name: string, password: string, address: string) =>
      send(tg.url, 'POST', '/api/session', { body: { login: name, password }, headers: { 'x-forwarded-for': address } });
    for (let i = 0; i < 9; i += 1) expect((await login('carol', `wrong guess ${i}`, `198.51.100.${i}`)).status).to.equal(401);
    // The right password, typed in another case: it is the same account, and it clears nothing.
    expect((await login('CAROL', PASSWORD, '198.51.100.100')).status).to.equal(200);
    expect((await login('Carol@Example.com', 'wrong guess 9', '198.51.100.101')).status).to.equal(401);
    expectError(await login('carol', PASSWORD, '198.51.100.102'), 429, 'too_many_attempts');
    expectError(await login('carol@example.com', 'wrong guess 10', '198.51.100.103'), 429, 'too_many_attempts');
  });
});
