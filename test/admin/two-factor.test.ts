/**
 * Two-factor sign-in through the management API: enrolling (codes computed here from the secret the
 * API shows, as an authenticator app would), signing in with a code and with a recovery code, a
 * replayed or wrong code refused, wrong codes limited like passwords, `console.require_2fa`, the
 * operator's reset, and the sessions list with ending one, all but this one, or (an admin) all.
 */
import { expect } from 'chai';
import { Secret, TOTP } from 'otpauth';
import { resetSecondFactorCommand } from '../../src/cli/account-console';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { ApiClient, expectError, send } from './api-client';
import { addAccount, consoleYaml, PASSWORD, passwordHash } from './fixtures';

/** The code an authenticator app shows for `secret`, `steps` 30-second steps from now. */
function codeOf(secret: string, steps = 0): string {
  return TOTP.generate({ secret: Secret.fromBase32(secret), period: 30, digits: 6, timestamp: Date.now() + steps * 30_000 });
}

/** Enrols the client's account; returns the secret and the recovery codes. */
async function enrol(client: ApiClient): Promise<{ secret: string; recovery: string[] }> {
  const begun = await client.post('/api/account/2fa', { password: PASSWORD });
  expect(begun.status, begun.text).to.equal(201);
  const confirmed = await client.post('/api/account/2fa/confirm', { code: codeOf(begun.body.secret) });
  expect(confirmed.status, confirmed.text).to.equal(200);
  return { secret: begun.body.secret, recovery: confirmed.body.recovery_codes };
}

const login = (url: string, name: string, extra: Record<string, unknown> = {}) =>
  send(url, 'POST', '/api/session', { body: { login: name, password: PASSWORD, ...extra } });

describe('management API: two-factor sign-in', function () {
  this.timeout(120_000);
  let tg: TestGateway;

  before(async () => {
    await passwordHash();
    tg = await startTestGateway({ yaml: consoleYaml('http://127.0.0.1:9', { console: 'login_failures_per_window: 0, require_2fa: none' }) });
  });

  after(async () => tg?.stop());

  it('enrols with a QR code and a first code, then signs in with a code, refuses it replayed, takes a recovery code once', async () => {
    await addAccount(tg.store, 'tess');
    const tess = await ApiClient.login(tg.url, 'tess', PASSWORD);
    const other = await ApiClient.login(tg.url, 'tess', PASSWORD);
    expectError(await tess.post('/api/account/2fa', {}), 400, 'invalid_request', 'password');
    expectError(await tess.post('/api/account/2fa', { password: 'not my password at all' }), 400, 'invalid_request', 'password');

    const begun = await tess.post('/api/account/2fa', { password: PASSWORD });
    expect(begun.status, begun.text).to.equal(201);
    expect(begun.body.uri).to.match(/^otpauth:\/\/totp\/Tollgate:tess\?/).and.include(`secret=${begun.body.secret}`);
    expect(begun.body.qr.modules).to.have.length(begun.body.qr.size ** 2);
    expect((await tess.get('/api/account/2fa')).body).to.deep.equal({ enabled: false, recovery_codes_left: 0, required: false });
    expectError(await tess.post('/api/account/2fa/confirm', { code: '000000' === codeOf(begun.body.secret) ? '111111' : '000000' }), 400, 'invalid_request', 'code');

    const confirmed = await tess.post('/api/account/2fa/confirm', { code: codeOf(begun.body.secret) });
    expect(confirmed.status, confirmed.text).to.equal(200);
    const recovery: string[] = confirmed.body.recovery_codes;
    expect(recovery).to.have.length(10);
    expect(new Set(recovery).size).to.equal(10);
    expect((await tess.get('/api/account/2fa')).body).to.deep.equal({ enabled: true, recovery_codes_left: 10, required: false });
    // A change of the sign-in rule ends the account's other sessions.
    expectError(await other.get('/api/account'), 401, 'unauthenticated');
    expect((await tess.get('/api/account')).status).to.equal(200);

    expectError(await login(tg.url, 'tess'), 401, 'two_factor_required', 'code');
    expectError(await login(tg.url, 'tess', { code: '12345' }), 401, 'invalid_credentials', 'code');
    // The code of the step confirmed is spent; the next step's code works once.
    const next = codeOf(begun.body.secret, 1);
    expect((await login(tg.url, 'tess', { code: next })).status).to.equal(200);
    expectError(await login(tg.url, 'tess', { code: next }), 401, 'invalid_credentials', 'code');

    const withRecovery = await login(tg.url, 'tess', { code: recovery[0].toUpperCase() });
    expect(withRecovery.status, withRecovery.text).to.equal(200);
    expectError(await login(tg.url, 'tess', { code: recovery[0] }), 401, 'invalid_credentials', 'code');
    expect((await tess.get('/api/account/2fa')).body.recovery_codes_left).to.equal(9);

    // Off again, with the password and a current code (here a recovery code), and a password alone signs in.
    expectError(await tess.request('DELETE', '/api/account/2fa', { body: { password: 'wrong password here' } }), 400, 'invalid_request', 'password');
    expectError(await tess.request('DELETE', '/api/account/2fa', { body: { password: PASSWORD } }), 401, 'two_factor_required', 'code');
    expectError(await tess.request('DELETE', '/api/account/2fa', { body: { password: PASSWORD, code: recovery[0] } }), 401, 'invalid_credentials', 'code');
    expect((await tess.get('/api/account/2fa')).body.enabled, 'still on').to.equal(true);
    expect((await tess.request('DELETE', '/api/account/2fa', { body: { password: PASSWORD, code: recovery[1] } })).status).to.equal(204);
    expect((await login(tg.url, 'tess')).status).to.equal(200);
  });

  it('with two-factor sign-in on, a management token and a new password need a current code too', async () => {
    await addAccount(tg.store, 'careful');
    const client = await ApiClient.login(tg.url, 'careful', PASSWORD);
    const { secret, recovery } = await enrol(client);
    const token = { name: 'script', password: PASSWORD };
    expectError(await client.post('/api/tokens', token), 401, 'two_factor_required', 'code');
    expectError(await client.post('/api/tokens', { ...token, code: '12345' }), 401, 'invalid_credentials', 'code');
    expect((await client.get('/api/tokens')).body.tokens).to.have.length(0);
    const minted = await client.post('/api/tokens', { ...token, code: codeOf(secret, 1) });
    expect(minted.status, minted.text).to.equal(201);

    // The token (a management credential) is held to the same rule.
    const bearer = ApiClient.bearer(tg.url, minted.body.secret as string);
    const change = { current_password: PASSWORD, new_password: 'a brand new long password' };
    expectError(await bearer.put('/api/account/password', change), 401, 'two_factor_required', 'code');
    expectError(await bearer.request('DELETE', '/api/account/2fa', { body: { password: PASSWORD } }), 401, 'two_factor_required', 'code');
    expectError(await client.put('/api/account/password', change), 401, 'two_factor_required', 'code');
    expect((await login(tg.url, 'careful', { code: recovery[0] })).status, 'the password is unchanged').to.equal(200);
    expect((await client.put('/api/account/password', { ...change, code: recovery[1] })).status).to.equal(204);
    const renewed = await send(tg.url, 'POST', '/api/session', { body: { login: 'careful', password: change.new_password, code: recovery[2] } });
    expect(renewed.status, renewed.text).to.equal(200);
  });

  it("an operator's reset-2fa lets the account in with its password and ends its sessions", async () => {
    await addAccount(tg.store, 'lost-phone');
    const client = await ApiClient.login(tg.url, 'lost-phone', PASSWORD);
    await enrol(client);
    expectError(await login(tg.url, 'lost-phone'), 401, 'two_factor_required');
    const { removed, ended } = await resetSecondFactorCommand(tg.store, 'lost-phone', () => undefined);
    expect(removed).to.equal(true);
    expect(ended).to.equal(1);
    expectError(await client.get('/api/account'), 401, 'unauthenticated');
    expect((await login(tg.url, 'lost-phone')).status).to.equal(200);
  });

  it('lists sessions and tokens, ends one, all but this one, and an admin ends all of an account', async () => {
    const { id } = await addAccount(tg.store, 'tabs');
    await addAccount(tg.store, 'chief', 'admin');
    const here = await ApiClient.login(tg.url, 'tabs', PASSWORD, { 'user-agent': 'Here/1.0' });
    const there = await ApiClient.login(tg.url, 'tabs', PASSWORD, { 'user-agent': 'There/2.0' });
    const elsewhere = await ApiClient.login(tg.url, 'tabs', PASSWORD);
    const token = ApiClient.bearer(tg.url, (await here.post('/api/tokens', { name: 'script', password: PASSWORD })).body.secret);

    const listed = await here.get('/api/account/sessions');
    expect(listed.status).to.equal(200);
    expect(listed.body.sessions).to.have.length(3);
    const current = listed.body.sessions.find((session: { current: boolean }) => session.current);
    expect(current.user_agent).to.equal('Here/1.0');
    const thereId = listed.body.sessions.find((session: { user_agent: string | null }) => session.user_agent === 'There/2.0').id;
    expect(listed.body.tokens.map((listedToken: { name: string }) => listedToken.name)).to.deep.equal(['script']);

    expect((await here.delete(`/api/account/sessions/${thereId}`)).status).to.equal(204);
    expectError(await there.get('/api/account'), 401, 'unauthenticated');
    expect((await elsewhere.get('/api/account')).status).to.equal(200);
    expectError(await here.delete(`/api/account/sessions/${thereId}`), 404, 'not_found');

    const ended = await here.delete('/api/account/sessions');
    expect(ended.body).to.deep.equal({ ended: 2 });
    expectError(await elsewhere.get('/api/account'), 401, 'unauthenticated');
    expectError(await token.get('/api/account'), 401, 'unauthenticated');
    expect((await here.get('/api/account')).status).to.equal(200);

    const chief = await ApiClient.login(tg.url, 'chief', PASSWORD);
    expect((await chief.delete(`/api/admin/accounts/${id}/sessions`)).body).to.deep.equal({ ended: 1 });
    expectError(await here.get('/api/account'), 401, 'unauthenticated');
    expectError(await ApiClient.login(tg.url, 'tabs', PASSWORD).then((client) => client.delete(`/api/admin/accounts/${id}/sessions`)), 403, 'forbidden');
  });
});

describe('management API: console.require_2fa and wrong codes', function () {
  this.timeout(120_000);
  let tg: TestGateway;

  before(async () => {
    await passwordHash();
    // require_2fa: admins is the default; written out because the suites' YAML turns it off.
    tg = await startTestGateway({ yaml: consoleYaml('http://127.0.0.1:9', { console: 'login_failures_per_window: 10, require_2fa: admins' }) });
  });

  after(async () => tg?.stop());

  it('under the default (admins), the first admin of a fresh install is sent to enrol at its first sign-in', async () => {
    await addAccount(tg.store, 'first-admin', 'admin');
    await addAccount(tg.store, 'plain-user');
    const first = await login(tg.url, 'first-admin');
    expect(first.status).to.equal(200);
    expect(first.body.enrol_2fa, 'no admin enrolled yet, and still required').to.equal(true);
    const client = await ApiClient.login(tg.url, 'first-admin', PASSWORD);
    expectError(await client.get('/api/admin/accounts'), 403, 'two_factor_enrolment_required');
    expectError(await client.get('/api/keys'), 403, 'two_factor_enrolment_required');
    expect((await client.get('/api/account/2fa')).body).to.deep.include({ enabled: false, required: true });
    expect((await client.get('/api/session')).status).to.equal(200);
    await enrol(client);
    expect((await client.get('/api/admin/accounts')).status).to.equal(200);
    // Required: it cannot be turned off.
    expectError(await client.request('DELETE', '/api/account/2fa', { body: { password: PASSWORD } }), 403, 'forbidden');

    const user = await login(tg.url, 'plain-user');
    expect(user.body.enrol_2fa).to.equal(false);
  });

});

describe('management API: wrong second-factor codes', function () {
  this.timeout(120_000);
  let tg: TestGateway;

  before(async () => {
    await passwordHash();
    tg = await startTestGateway({ yaml: consoleYaml('http://127.0.0.1:9', { console: 'login_failures_per_window: 5, require_2fa: none' }) });
  });

  after(async () => tg?.stop());

  it('counts wrong codes like wrong passwords: past the limit, 429 even with the right code', async () => {
    await addAccount(tg.store, 'guessed');
    const { secret } = await enrol(await ApiClient.login(tg.url, 'guessed', PASSWORD));
    for (let i = 0; i < 5; i += 1) expectError(await login(tg.url, 'guessed', { code: `${100000 + i}` === codeOf(secret, 1) ? '999999' : `${100000 + i}` }), 401, 'invalid_credentials');
    expectError(await login(tg.url, 'guessed', { code: codeOf(secret, 1) }), 429, 'too_many_attempts');
  });
});
