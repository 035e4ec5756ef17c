/**
 * Console sessions (docs/faults.md#i1): the cookie's attributes, plain http and behind a TLS proxy,
 * the session id rotating at login, logout ending the session on the server, the login limiter,
 * one answer for unknown names and wrong passwords, sign-up, and changing the password.
 */
import { expect } from 'chai';
import { verifyPassword } from '../../src/auth/passwords';
import { csrfTokenFor, hashSecret, newSessionSecret } from '../../src/admin/secrets';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { ApiClient, expectError, send, sessionCookieOf, type ApiAnswer } from './api-client';
import { addAccount, consoleYaml, PASSWORD, passwordHash, SIGNED_IN_LOOKUPS, SIGNED_IN_ROUTES } from './fixtures';

/** The attributes of the session cookie's Set-Cookie line, names lower-cased. */
function cookieAttributes(answer: ApiAnswer): Map<string, string> {
  const line = answer.cookies.find((candidate) => candidate.startsWith('tollgate_session='));
  expect(line, `a session cookie in ${JSON.stringify(answer.cookies)}`).to.be.a('string');
  const attributes = new Map<string, string>();
  for (const part of line!.split(';').slice(1)) {
    const [name, ...value] = part.trim().split('=');
    attributes.set(name.toLowerCase(), value.join('='));
  }
  return attributes;
}

describe('management API: sessions', function () {
  this.timeout(20_000);
  let tg: TestGateway;

  before(async () => {
    await passwordHash();
    tg = await startTestGateway({ yaml: consoleYaml('http://127.0.0.1:9') });
    await addAccount(tg.store, 'alice', 'user', 'alice@example.com');
    await addAccount(tg.store, 'carol', 'user');
    await addAccount(tg.store, 'dave', 'user');
    await addAccount(tg.store, 'erin', 'user');
  });

  after(async () => tg?.stop());

  describe('logging in', () => {
    it('sets an HttpOnly, SameSite=Strict cookie on Path=/api, not Secure on plain http, and returns the CSRF token', async () => {
      const answer = await send(tg.url, 'POST', '/api/session', { body: { login: 'alice', password: PASSWORD } });
      expect(answer.status, answer.text).to.equal(200);
      expect(answer.body.account).to.deep.include({ name: 'alice', email: 'alice@example.com', role: 'user', disabled: false });
      expect(answer.body.account.id).to.match(/^acc_/);
      expect(answer.body).to.not.have.property('password_hash');
      const secret = sessionCookieOf(answer.cookies)!;
      expect(secret).to.have.length.above(30);
      expect(answer.body.csrf_token).to.equal(csrfTokenFor(secret));
      expect(answer.body.csrf_token).to.not.equal(secret);

      const attributes = cookieAttributes(answer);
      expect(attributes.has('httponly'), 'HttpOnly').to.equal(true);
      expect(attributes.get('samesite')?.toLowerCase()).to.equal('strict');
      expect(attributes.get('path')).to.equal('/api');
      expect(attributes.has('secure'), 'Secure on plain http').to.equal(false);
      // The default session lasts 168 hours.
      const expires = Date.parse(attributes.get('expires')!);
      expect(expires - Date.now()).to.be.within(167 * 3_600_000, 169 * 3_600_000);
      expect(answer.headers.get('strict-transport-security')).to.equal(null);

      const client = new ApiClient(tg.url, secret);
      const session = await client.get('/api/session');
      expect(session.status).to.equal(200);
      expect(session.body).to.deep.equal({ account: answer.body.account, csrf_token: answer.body.csrf_token });
    });

    it('ignores X-Forwarded-Proto unless server.trust_proxy is set', async () => {
      const answer = await send(tg.url, 'POST', '/api/session', {
        body: { login: 'alice', password: PASSWORD },
        headers: { 'x-forwarded-proto': 'https' },
      });
      expect(answer.status).to.equal(200);
      expect(cookieAttributes(answer).has('secure')).to.equal(false);
      expect(answer.headers.get('strict-transport-security')).to.equal(null);
    });

    it('takes the e-mail address (in any case) in place of the name', async () => {
      const answer = await send(tg.url, 'POST', '/api/session', { body: { login: 'ALICE@Example.com', password: PASSWORD } });
      expect(answer.status, answer.text).to.equal(200);
      expect(answer.body.account.name).to.equal('alice');
    });

    it('answers an unknown name exactly as a wrong password, and sets no cookie', async () => {
      const [wrong, unknown] = await Promise.all([
        send(tg.url, 'POST', '/api/session', { body: { login: 'alice', password: 'not the password' } }),
        send(tg.url, 'POST', '/api/session', { body: { login: 'nobody-here', password: PASSWORD } }),
      ]);
      expectError(wrong, 401, 'invalid_credentials', null);
      expectError(unknown, 401, 'invalid_credentials', null);
      expect(unknown.text).to.equal(wrong.text);
      expect(wrong.cookies).to.deep.equal([]);
      expect(unknown.cookies).to.deep.equal([]);
    });

    it('names the missing field, and wants JSON', async () => {
      expectError(await send(tg.url, 'POST', '/api/session', { body: { password: PASSWORD } }), 400, 'invalid_request', 'login');
      expectError(await send(tg.url, 'POST', '/api/session', { body: { login: 'alice' } }), 400, 'invalid_request', 'password');
      expectError(await send(tg.url, 'POST', '/api/session', { body: 'not json' }), 400, 'invalid_request');
      const form = await send(tg.url, 'POST', '/api/session', {
        body: `login=alice&password=${encodeURIComponent(PASSWORD)}`,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expectError(form, 415, 'unsupported_media_type');
      expect(form.cookies).to.deep.equal([]);
    });

    it('refuses a login posted from another origin before looking at the password', async () => {
      const answer = await send(tg.url, 'POST', '/api/session', {
        body: { login: 'alice', password: PASSWORD },
        headers: { origin: 'https://evil.example' },
      });
      expectError(answer, 403, 'csrf_failed');
      expect(answer.cookies).to.deep.equal([]);
      const sameOrigin = await send(tg.url, 'POST', '/api/session', { body: { login: 'alice', password: PASSWORD }, headers: { origin: tg.url } });
      expect(sameOrigin.status, 'its own origin').to.equal(200);
    });

    it('rotates the session id at login: the cookie sent with the login stops working', async () => {
      const first = await ApiClient.login(tg.url, 'dave', PASSWORD);
      const before = first.cookie!;
      const again = await send(tg.url, 'POST', '/api/session', {
        body: { login: 'dave', password: PASSWORD },
        headers: { cookie: `tollgate_session=${before}` },
      });
      expect(again.status).to.equal(200);
      const after = sessionCookieOf(again.cookies)!;
      expect(after).to.be.a('string').and.not.equal(before);
      expectError(await new ApiClient(tg.url, before).get('/api/session'), 401, 'unauthenticated');
      expect((await new ApiClient(tg.url, after).get('/api/session')).status).to.equal(200);
    });
  });

  describe('logging out', () => {
    it('needs the CSRF token, then ends the session on the server and clears the cookie', async () => {
      const client = await ApiClient.login(tg.url, 'alice', PASSWORD);
      const cookie = client.cookie!;

      expectError(await client.delete('/api/session', { csrf: false }), 403, 'csrf_failed');
      expect((await client.get('/api/session')).status, 'still logged in').to.equal(200);

      const out = await client.delete('/api/session');
      expect(out.status).to.equal(204);
      expect(out.text).to.equal('');
      const cleared = out.cookies.find((line) => line.startsWith('tollgate_session='))!;
      expect(cleared).to.match(/^tollgate_session=;/);
      expect(cleared.toLowerCase()).to.include('path=/api').and.include('expires=thu, 01 jan 1970');

      // Replaying the old cookie (as a stolen copy would) is refused: the session is gone server-side.
      const replay = new ApiClient(tg.url, cookie, client.csrfToken);
      expectError(await replay.get('/api/session'), 401, 'unauthenticated');
      expectError(await replay.get('/api/keys'), 401, 'unauthenticated');
      expectError(await replay.post('/api/keys', { name: 'after-logout' }), 401, 'unauthenticated');
      expect(await tg.store.listKeys({ accountId: (await tg.store.findAccountByName('alice'))!.id })).to.have.length(0);
    });
  });

  describe('without a credential', () => {
    it('answers 401 unauthenticated on every signed-in route', async () => {
      for (const [method, path, body] of SIGNED_IN_ROUTES) {
        const answer = await send(tg.url, method, path, { body });
        expectError(answer, 401, 'unauthenticated');
      }
      for (const [method, path] of SIGNED_IN_LOOKUPS) expectError(await send(tg.url, method, path), 401, 'unauthenticated');
    });

    it('answers 401 to an expired session', async () => {
      const account = (await tg.store.findAccountByName('dave'))!;
      const [expired, live] = [newSessionSecret(), newSessionSecret()];
      await tg.store.createSession({ accountId: account.id, hash: hashSecret(expired), kind: 'session', name: null, expiresAt: new Date(Date.now() - 1000) });
      await tg.store.createSession({ accountId: account.id, hash: hashSecret(live), kind: 'session', name: null, expiresAt: new Date(Date.now() + 60_000) });
      expectError(await new ApiClient(tg.url, expired).get('/api/session'), 401, 'unauthenticated');
      expect((await new ApiClient(tg.url, live).get('/api/session')).body.account.name).to.equal('dave');
    });

    it('answers 401 to a cookie that is no session, however it looks', async () => {
      for (const value of ['x', 'A'.repeat(43), `${'A'.repeat(42)}!`, 'tgm_' + 'A'.repeat(43)]) {
        expectError(await new ApiClient(tg.url, value).get('/api/session'), 401, 'unauthenticated');
      }
    });
  });

  describe('changing the password', () => {
    it('checks the current password and the new one, naming the field', async () => {
      const client = await ApiClient.login(tg.url, 'carol', PASSWORD);
      expectError(await client.put('/api/account/password', { current_password: 'wrong password!', new_password: 'a brand new password' }), 400, 'invalid_request', 'current_password');
      expectError(await client.put('/api/account/password', { current_password: PASSWORD, new_password: 'short' }), 400, 'invalid_request', 'new_password');
      expectError(await client.put('/api/account/password', { new_password: 'a brand new password' }), 400, 'invalid_request', 'current_password');
      expectError(await client.put('/api/account/password', { current_password: PASSWORD, new_password: 'a brand new password' }, { csrf: false }), 403, 'csrf_failed');
      // Nothing changed: the stored hash is still the one of the old password.
      expect((await tg.store.findLogin('carol'))!.passwordHash).to.equal(await passwordHash());
    });

    it('ends the account\'s other sessions, keeps the current one, and the new password logs in', async () => {
      const account = (await tg.store.findAccountByName('erin'))!;
      const [current, other] = await Promise.all([ApiClient.login(tg.url, 'erin', PASSWORD), ApiClient.login(tg.url, 'erin', PASSWORD)]);
      const newPassword = 'an entirely new passphrase';
      const changed = await current.put('/api/account/password', { current_password: PASSWORD, new_password: newPassword });
      expect(changed.status, changed.text).to.equal(204);

      expect((await current.get('/api/session')).status, 'the session that changed it').to.equal(200);
      expectError(await other.get('/api/session'), 401, 'unauthenticated');
      expect(await tg.store.listSessions(account.id, 'session')).to.have.length(1);

      const [withOld, withNew] = await Promise.all([ApiClient.tryLogin(tg.url, 'erin', PASSWORD), ApiClient.tryLogin(tg.url, 'erin', newPassword)]);
      expectError(withOld.answer, 401, 'invalid_credentials');
      expect(withNew.answer.status).to.equal(200);
      expect(withNew.answer.body.account.id).to.equal(account.id);
    });
  });

  describe('sign-up', () => {
    it('is off by default: 403 signup_disabled and no account', async () => {
      expect((await send(tg.url, 'GET', '/api/meta')).body.signup).to.equal(false);
      const before = (await tg.store.listAccounts()).length;
      const answer = await send(tg.url, 'POST', '/api/signup', { body: { name: 'newcomer', password: 'long enough password' } });
      expectError(answer, 403, 'signup_disabled');
      expect(answer.cookies).to.deep.equal([]);
      expect(await tg.store.listAccounts()).to.have.length(before);
      expect(await tg.store.findAccountByName('newcomer')).to.equal(null);
    });

    describe('when turned on', () => {
      let open: TestGateway;

      before(async () => {
        open = await startTestGateway({ yaml: consoleYaml('http://127.0.0.1:9', { console: 'signup: true, login_failures_per_window: 0' }) });
        await addAccount(open.store, 'taken', 'user', 'taken@example.com');
      });

      after(async () => open?.stop());

      it('creates a user account and logs it in (201); a role in the body is ignored', async () => {
        expect((await send(open.url, 'GET', '/api/meta')).body.signup).to.equal(true);
        const answer = await send(open.url, 'POST', '/api/signup', {
          body: { name: 'new.user', email: 'New.User@Example.com', password: 'long enough password', role: 'admin' },
        });
        expect(answer.status, answer.text).to.equal(201);
        expect(answer.body.account).to.deep.include({ name: 'new.user', email: 'new.user@example.com', role: 'user', disabled: false });
        const cookie = sessionCookieOf(answer.cookies)!;
        expect(answer.body.csrf_token).to.equal(csrfTokenFor(cookie));
        expect(cookieAttributes(answer).has('httponly')).to.equal(true);

        const client = new ApiClient(open.url, cookie, answer.body.csrf_token);
        expect((await client.get('/api/session')).body.account.id).to.equal(answer.body.account.id);
        expect((await client.post('/api/keys', { name: 'first' })).status).to.equal(201);
        const stored = (await open.store.findAccountByName('new.user'))!;
        expect(stored.role).to.equal('user');
        expect((await open.store.balance(stored.id)).balance).to.equal(0n);
      });

      it('answers 409 naming the field when the name or the e-mail is taken', async () => {
        const [name, email] = await Promise.all([
          send(open.url, 'POST', '/api/signup', { body: { name: 'taken', password: 'long enough password' } }),
          send(open.url, 'POST', '/api/signup', { body: { name: 'free-name', email: 'TAKEN@example.com', password: 'long enough password' } }),
        ]);
        expectError(name, 409, 'conflict', 'name');
        expectError(email, 409, 'conflict', 'email');
        expect(name.cookies).to.deep.equal([]);
        expect(await open.store.findAccountByName('free-name')).to.equal(null);
      });

      it('answers 400 naming the field for a bad name, e-mail or password', async () => {
        const cases: [Record<string, unknown>, string][] = [
          [{ name: 'ab', password: 'long enough password' }, 'name'],
          [{ name: 'has space', password: 'long enough password' }, 'name'],
          [{ name: '-dash-first', password: 'long enough password' }, 'name'],
          [{ password: 'long enough password' }, 'name'],
          [{ name: 'okname', email: 'not-an-email', password: 'long enough password' }, 'email'],
          [{ name: 'okname', password: 'short' }, 'password'],
          [{ name: 'okname', password: 1234567890123 }, 'password'],
        ];
        for (const [body, field] of cases) {
          expectError(await send(open.url, 'POST', '/api/signup', { body }), 400, 'invalid_request', field);
        }
        expect(await open.store.findAccountByName('okname')).to.equal(null);
      });

      it('allows an address login_failures_per_window sign-ups per window, then 429', async () => {
        const limited = await startTestGateway({
          yaml: consoleYaml('http://127.0.0.1:9', { server: 'trust_proxy: true', console: 'signup: true, login_failures_per_window: 2' }),
        });
        try {
          const from = { 'x-forwarded-for': '198.51.100.77' };
          const signUp = (name: string, headers: Record<string, string>) =>
            send(limited.url, 'POST', '/api/signup', { body: { name, password: 'long enough password' }, headers });
          expect((await signUp('first-one', from)).status).to.equal(201);
          expect((await signUp('second-one', from)).status).to.equal(201);
          const third = await signUp('third-one', from);
          expectError(third, 429, 'too_many_attempts');
          expect(await limited.store.findAccountByName('third-one')).to.equal(null);
          expect((await signUp('third-one', { 'x-forwarded-for': '198.51.100.78' })).status, 'another address').to.equal(201);
        } finally {
          await limited.stop();
        }
      });

      it('refuses a sign-up posted from another origin', async () => {
        const answer = await send(open.url, 'POST', '/api/signup', {
          body: { name: 'csrf-victim', password: 'long enough password' },
          headers: { origin: 'https://evil.example' },
        });
        expectError(answer, 403, 'csrf_failed');
        expect(await open.store.findAccountByName('csrf-victim')).to.equal(null);
      });
    });
  });

  describe('behind a TLS proxy (server.trust_proxy: true), with the login limiter at 3', () => {
    let proxied: TestGateway;

    before(async () => {
      proxied = await startTestGateway({
        yaml: consoleYaml('http://127.0.0.1:9', { server: 'trust_proxy: true', console: 'login_failures_per_window: 3' }),
      });
      await addAccount(proxied.store, 'secure-user', 'user');
      await addAccount(proxied.store, 'victim', 'user');
      await addAccount(proxied.store, 'bystander', 'user');
      await addAccount(proxied.store, 'burst-target', 'user');
    });

    after(async () => proxied?.stop());

    it('marks the cookie Secure and sends HSTS when X-Forwarded-Proto is https', async () => {
      const answer = await send(proxied.url, 'POST', '/api/session', {
        body: { login: 'secure-user', password: PASSWORD },
        headers: { 'x-forwarded-proto': 'https', 'x-forwarded-for': '198.51.100.1' },
      });
      expect(answer.status, answer.text).to.equal(200);
      const attributes = cookieAttributes(answer);
      expect(attributes.has('secure'), 'Secure').to.equal(true);
      expect(attributes.has('httponly')).to.equal(true);
      expect(attributes.get('samesite')?.toLowerCase()).to.equal('strict');
      expect(attributes.get('path')).to.equal('/api');
      expect(answer.headers.get('strict-transport-security')).to.match(/^max-age=\d{7,}/);

      // The console's own https origin is accepted; plain http would be another origin.
      const host = new URL(proxied.url).host;
      const client = new ApiClient(proxied.url, sessionCookieOf(answer.cookies), answer.body.csrf_token);
      const https = { 'x-forwarded-proto': 'https', origin: `https://${host}` };
      expect((await client.post('/api/tokens', { name: 'via-proxy', password: PASSWORD }, { headers: https })).status).to.equal(201);
      expectError(await client.post('/api/tokens', { name: 'via-http', password: PASSWORD }, { headers: { 'x-forwarded-proto': 'https', origin: `http://${host}` } }), 403, 'csrf_failed');

      const overHttp = await send(proxied.url, 'GET', '/api/meta');
      expect(overHttp.headers.get('strict-transport-security'), 'no HSTS on plain http').to.equal(null);
      const overHttps = await send(proxied.url, 'GET', '/api/meta', { headers: { 'x-forwarded-proto': 'https' } });
      expect(overHttps.headers.get('strict-transport-security')).to.match(/^max-age=/);
    });

    it('refuses logins with 429 and retry-after past login_failures_per_window wrong passwords, even the right one', async () => {
      const from = { 'x-forwarded-for': '203.0.113.7' };
      for (let i = 0; i < 3; i += 1) {
        const wrong = await send(proxied.url, 'POST', '/api/session', { body: { login: 'victim', password: `wrong password ${i}` }, headers: from });
        expectError(wrong, 401, 'invalid_credentials');
      }
      const limited = await send(proxied.url, 'POST', '/api/session', { body: { login: 'victim', password: PASSWORD }, headers: from });
      expectError(limited, 429, 'too_many_attempts');
      expect(Number(limited.headers.get('retry-after'))).to.be.within(1, 15 * 60);
      expect(limited.cookies).to.deep.equal([]);

      // Counted per name: the same name from a fresh address waits too ...
      const elsewhere = await send(proxied.url, 'POST', '/api/session', {
        body: { login: 'VICTIM', password: PASSWORD },
        headers: { 'x-forwarded-for': '192.0.2.200' },
      });
      expectError(elsewhere, 429, 'too_many_attempts');
      // ... and per address: that address cannot try other names either.
      const otherName = await send(proxied.url, 'POST', '/api/session', { body: { login: 'bystander', password: PASSWORD }, headers: from });
      expectError(otherName, 429, 'too_many_attempts');
      // Another name from another address is not affected.
      const unrelated = await send(proxied.url, 'POST', '/api/session', {
        body: { login: 'bystander', password: PASSWORD },
        headers: { 'x-forwarded-for': '192.0.2.201' },
      });
      expect(unrelated.status, unrelated.text).to.equal(200);
    });

    it('limits wrong current passwords on a password change like logins: a stolen session cannot guess it', async () => {
      const from = { 'x-forwarded-for': '203.0.113.90' };
      await addAccount(proxied.store, 'pw-holder', 'user');
      const client = await ApiClient.login(proxied.url, 'pw-holder', PASSWORD, from);
      for (let i = 0; i < 3; i += 1) {
        const wrong = await client.put('/api/account/password', { current_password: `guess ${i} of it`, new_password: 'a brand new password' }, { headers: from });
        expectError(wrong, 400, 'invalid_request', 'current_password');
      }
      const limited = await client.put('/api/account/password', { current_password: PASSWORD, new_password: 'a brand new password' }, { headers: from });
      expectError(limited, 429, 'too_many_attempts');
      expect(Number(limited.headers.get('retry-after'))).to.be.within(1, 15 * 60);
      // Still the old password: the right one was not even checked.
      const stored = (await proxied.store.findLogin('pw-holder'))!.passwordHash!;
      expect(await verifyPassword(PASSWORD, stored)).to.equal(true);
    });

    it('counts guesses sent all at once: a burst gets no more than login_failures_per_window checked', async () => {
      const burst = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          send(proxied.url, 'POST', '/api/session', {
            body: { login: 'burst-target', password: `guess number ${i}` },
            headers: { 'x-forwarded-for': `198.51.100.${50 + i}` },
          }),
        ),
      );
      const statuses = burst.map((answer) => answer.status).sort();
      expect(statuses).to.deep.equal([401, 401, 401, 429, 429, 429, 429, 429]);
    });
  });
});
