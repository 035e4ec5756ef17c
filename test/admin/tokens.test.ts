/**
 * Management tokens: created from a console session (the secret shown once), listed without it,
 * used as `Authorization: Bearer tgm_…`, and dead once deleted.
 */
import { expect } from 'chai';
import { hashSecret } from '../../src/admin/secrets';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { ApiClient, expectError } from './api-client';
import { addAccount, consoleYaml, PASSWORD, passwordHash } from './fixtures';

describe('management API: management tokens', function () {
  this.timeout(20_000);
  let tg: TestGateway;
  let tia: ApiClient;
  let ugo: ApiClient;
  let tiaId: string;

  before(async () => {
    await passwordHash();
    tg = await startTestGateway({ yaml: consoleYaml('http://127.0.0.1:9') });
    tiaId = (await addAccount(tg.store, 'tia')).id;
    await addAccount(tg.store, 'ugo');
    [tia, ugo] = await Promise.all([ApiClient.login(tg.url, 'tia', PASSWORD), ApiClient.login(tg.url, 'ugo', PASSWORD)]);
  });

  after(async () => tg?.stop());

  it('creates a token (201) whose secret is shown once, lists it, works as a bearer, and is dead once deleted', async () => {
    const created = await tia.post('/api/tokens', { name: 'ci', password: PASSWORD });
    expect(created.status, created.text).to.equal(201);
    const { token, secret } = created.body;
    expect(secret).to.match(/^tgm_[A-Za-z0-9_-]{43}$/);
    expect(Object.keys(token).sort()).to.deep.equal(['created_at', 'expires_at', 'id', 'last_used_at', 'name']);
    expect(token.name).to.equal('ci');
    expect(Date.parse(token.created_at)).to.be.closeTo(Date.now(), 5000);
    // Only its hash is stored.
    const [stored] = await tg.store.listSessions(tiaId, 'token');
    expect(stored.id).to.equal(token.id);
    expect((await tg.store.findSession(hashSecret(secret), new Date()))!.account.id).to.equal(tiaId);

    const list = await tia.get('/api/tokens');
    expect(list.status).to.equal(200);
    expect(list.body.tokens).to.deep.equal([token]);
    expect(list.text).to.not.include(secret);

    const script = ApiClient.bearer(tg.url, secret);
    const session = await script.get('/api/session');
    expect(session.status).to.equal(200);
    expect(session.body.account.name).to.equal('tia');
    expect(session.body.csrf_token).to.equal(null);
    const key = await script.post('/api/keys', { name: 'made-by-script' });
    expect(key.status, key.text).to.equal(201);
    expect((await tia.get('/api/keys')).body.keys.map((listed: { id: string }) => listed.id)).to.include(key.body.key.id);

    expectError(await tia.delete(`/api/tokens/${token.id}`, { csrf: false }), 403, 'csrf_failed');
    expect((await script.get('/api/session')).status).to.equal(200);

    const deleted = await tia.delete(`/api/tokens/${token.id}`);
    expect(deleted.status).to.equal(204);
    expect(deleted.text).to.equal('');
    expectError(await script.get('/api/session'), 401, 'unauthenticated');
    expectError(await script.post('/api/keys', { name: 'after-delete' }), 401, 'unauthenticated');
    expect((await tia.get('/api/tokens')).body.tokens).to.deep.equal([]);
    expectError(await tia.delete(`/api/tokens/${token.id}`), 404, 'not_found');
  });

  it('lists the newest token first, and a nameless token has name null', async () => {
    const first = (await tia.post('/api/tokens', { name: 'first', password: PASSWORD })).body.token;
    const second = (await tia.post('/api/tokens', { password: PASSWORD })).body.token;
    expect(second.name).to.equal(null);
    const ids = (await tia.get('/api/tokens')).body.tokens.map((token: { id: string }) => token.id);
    expect(ids).to.deep.equal([second.id, first.id]);
    expectError(await tia.post('/api/tokens', { name: 'n'.repeat(61), password: PASSWORD }), 400, 'invalid_request', 'name');
    expectError(await tia.post('/api/tokens', { name: 7, password: PASSWORD }), 400, 'invalid_request', 'name');
  });

  it('lets no account see or delete another account\'s tokens, nor end a session by its id', async () => {
    const created = await tia.post('/api/tokens', { name: 'tias', password: PASSWORD });
    const { token, secret } = created.body;
    expect((await ugo.get('/api/tokens')).body.tokens).to.deep.equal([]);
    expectError(await ugo.delete(`/api/tokens/${token.id}`), 404, 'not_found');
    expect((await ApiClient.bearer(tg.url, secret).get('/api/session')).status, 'still alive').to.equal(200);

    // A console session is not a token: its id cannot be deleted through /api/tokens.
    const [session] = await tg.store.listSessions(tiaId, 'session');
    expectError(await tia.delete(`/api/tokens/${session.id}`), 404, 'not_found');
    expect((await tia.get('/api/session')).status).to.equal(200);
  });

  it('a token is no cookie, and a cookie no token', async () => {
    const { secret } = (await tia.post('/api/tokens', { name: 'not-a-cookie', password: PASSWORD })).body;
    expect((await ApiClient.bearer(tg.url, secret).get('/api/session')).status).to.equal(200);
    expectError(await new ApiClient(tg.url, secret).get('/api/session'), 401, 'unauthenticated');
    expectError(await ApiClient.bearer(tg.url, tia.cookie!).get('/api/session'), 401, 'unauthenticated');
    expectError(await ApiClient.bearer(tg.url, `tgm_${tia.cookie!}`).get('/api/session'), 401, 'unauthenticated');
  });

  it('a token ends itself with DELETE /api/session, without touching the console session', async () => {
    const { secret } = (await tia.post('/api/tokens', { name: 'self-ending', password: PASSWORD })).body;
    const script = ApiClient.bearer(tg.url, secret);
    const out = await script.delete('/api/session');
    expect(out.status).to.equal(204);
    expect(out.cookies).to.deep.equal([]);
    expectError(await script.get('/api/session'), 401, 'unauthenticated');
    expect((await tia.get('/api/session')).status).to.equal(200);
  });
});
