/**
 * The management API's defences (docs/faults.md#console-and-management-api): one account never reaches
 * another's keys or usage; CSRF (token and Origin) on every state change made with the cookie, none needed
 * with a management token; GETs change nothing; API keys refused on /api and console credentials refused on
 * /v1; JSON that is never HTML; CSV cells that are never formulas; and the security headers.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import Router from '@koa/router';
import { expect } from 'chai';
import type { AdminDeps, ApiState } from '../../src/admin/context';
import { hashSecret, newManagementToken } from '../../src/admin/secrets';
import { PACKAGE_ROOT } from '../../src/paths';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { ApiClient, expectError, send, type ApiAnswer } from './api-client';
import { ADMIN_ROUTES, addAccount, chargesOf, chat, chatWith, consoleYaml, PASSWORD, passwordHash, SIGNED_IN_LOOKUPS, SIGNED_IN_ROUTES } from './fixtures';

/** Routes anyone may call. */
const PUBLIC_ROUTES = [
  ['GET', '/api/meta'],
  ['GET', '/api/prices'],
  ['POST', '/api/session'],
  ['POST', '/api/signup'],
  // Signed by Stripe, not a login: refused without a valid signature (test/payments).
  ['POST', '/api/payments/stripe/webhook'],
] as const;

/** RFC 4180 records: quoted cells may hold commas, doubled quotes and line breaks. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const char = text[i];
    if (quoted) {
      if (char === '"' && text[i + 1] === '"') (cell += '"'), (i += 1);
      else if (char === '"') quoted = false;
      else cell += char;
    } else if (char === '"') quoted = true;
    else if (char === ',') row.push(cell), (cell = '');
    else if (char === '\r' && text[i + 1] === '\n') row.push(cell), rows.push(row), (row = []), (cell = ''), (i += 1);
    else cell += char;
  }
  expect(cell, 'the CSV ends with CRLF').to.equal('');
  expect(row).to.deep.equal([]);
  return rows;
}

function expectApiHeaders(answer: ApiAnswer): void {
  expect(answer.headers.get('cache-control'), `cache-control of a ${answer.status}`).to.equal('no-store');
  expect(answer.headers.get('x-content-type-options')).to.equal('nosniff');
  expect(answer.headers.get('content-security-policy')).to.equal("default-src 'none'; frame-ancestors 'none'");
  expect(answer.headers.get('x-frame-options')).to.equal('DENY');
  expect(answer.headers.get('referrer-policy')).to.equal('no-referrer');
}

describe('management API: security', function () {
  this.timeout(20_000);
  let fake: FakeUpstream;
  let tg: TestGateway;
  let amy: ApiClient;
  let bo: ApiClient;
  let amyId: string;
  let boId: string;

  before(async () => {
    await passwordHash();
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: consoleYaml(fake.url) });
    amyId = (await addAccount(tg.store, 'amy')).id;
    boId = (await addAccount(tg.store, 'bo')).id;
    [amy, bo] = await Promise.all([ApiClient.login(tg.url, 'amy', PASSWORD), ApiClient.login(tg.url, 'bo', PASSWORD)]);
  });

  after(async () => {
    await tg?.stop();
    await fake?.close();
  });

  describe('authorization between accounts', () => {
    let bosKey: { id: string; secret: string };

    before(async () => {
      bosKey = await bo.createKey({ name: 'bos-key', spend_limit: '3' });
      expect((await chat(tg.url, bosKey.secret)).status).to.equal(200);
      await chargesOf(tg.store, boId, 1);
      // amy has usage of her own, so that "none of bo's rows" is not merely "no rows at all".
      const amys = await amy.createKey({ name: 'amys-key' });
      expect((await chat(tg.url, amys.secret)).status).to.equal(200);
      await chargesOf(tg.store, amyId, 1);
    });

    it('a user cannot list, patch or revoke another account\'s key: 404, and the key is untouched', async () => {
      const amysKeys = (await amy.get('/api/keys')).body.keys;
      expect(amysKeys.map((key: { name: string }) => key.name)).to.deep.equal(['amys-key']);
      expect(JSON.stringify(amysKeys)).to.not.include(bosKey.id);

      expectError(await amy.patch(`/api/keys/${bosKey.id}`, { spend_limit: '1000', models: null, rate_limits: null }), 404, 'not_found');
      expectError(await amy.delete(`/api/keys/${bosKey.id}`), 404, 'not_found');
      // The same answer as for an id that exists nowhere, so ids of others reveal nothing.
      const nowhere = await amy.delete('/api/keys/key_ffffffffffffffff');
      expect((await amy.delete(`/api/keys/${bosKey.id}`)).body.error.message).to.equal(nowhere.body.error.message);

      const [stored] = await tg.store.listKeys({ accountId: boId });
      expect(stored).to.deep.include({ id: bosKey.id, revokedAt: null, spendLimit: 3_000_000_000n });
      expect((await chat(tg.url, bosKey.secret)).status, 'bo\'s key still works').to.equal(200);
      expect((await bo.get('/api/keys')).body.keys[0]).to.deep.include({ id: bosKey.id, status: 'active', spend_limit: '3' });
    });

    it('a user cannot read another account\'s usage: its key_id gives none of its rows, its account_id 403', async () => {
      expect((await bo.get(`/api/usage?key_id=${bosKey.id}`)).body.usage.length, 'bo sees them').to.be.at.least(1);
      expect((await amy.get('/api/usage')).body.usage.length, 'amy sees her own').to.be.at.least(1);
      const filtered = await amy.get(`/api/usage?key_id=${bosKey.id}`);
      expect(filtered.status).to.equal(200);
      expect(filtered.body.usage).to.deep.equal([]);
      expect((await amy.get('/api/usage')).body.usage.filter((row: { key_id: string }) => row.key_id === bosKey.id)).to.deep.equal([]);
      expectError(await amy.get(`/api/usage?account_id=${boId}`), 403, 'forbidden');
      expectError(await amy.get(`/api/usage?account_id=${boId}&format=csv`), 403, 'forbidden');
    });
  });

  describe('CSRF', () => {
    async function amysKeyCount(): Promise<number> {
      return (await tg.store.listKeys({ accountId: amyId })).length;
    }

    it('refuses a state change with the cookie but without the x-csrf-token header (403 csrf_failed), creating nothing', async () => {
      const before = await amysKeyCount();
      expectError(await amy.post('/api/keys', { name: 'no-token' }, { csrf: false }), 403, 'csrf_failed');
      expectError(await amy.post('/api/keys', { name: 'empty-token' }, { csrf: false, headers: { 'x-csrf-token': '' } }), 403, 'csrf_failed');
      // One character off (never the same character: that would be the right token).
      const last = amy.csrfToken!.at(-1) === 'A' ? 'B' : 'A';
      expectError(await amy.post('/api/keys', { name: 'wrong-token' }, { headers: { 'x-csrf-token': `${amy.csrfToken!.slice(0, -1)}${last}` } }), 403, 'csrf_failed');
      expectError(await amy.post('/api/keys', { name: 'bos-token' }, { headers: { 'x-csrf-token': bo.csrfToken! } }), 403, 'csrf_failed');
      expectError(await amy.post('/api/tokens', { name: 'no-token', password: PASSWORD }, { csrf: false }), 403, 'csrf_failed');
      expect(await amysKeyCount()).to.equal(before);
      expect(await tg.store.listSessions(amyId, 'token')).to.deep.equal([]);
    });

    it('refuses a cross-site request even with the right token, and accepts its own origin', async () => {
      const before = await amysKeyCount();
      expectError(await amy.post('/api/keys', { name: 'evil' }, { headers: { origin: 'https://evil.example' } }), 403, 'csrf_failed');
      expectError(await amy.post('/api/keys', { name: 'null-origin' }, { headers: { origin: 'null' } }), 403, 'csrf_failed');
      expectError(await amy.post('/api/keys', { name: 'other-port' }, { headers: { origin: 'http://127.0.0.1:1' } }), 403, 'csrf_failed');
      expectError(await amy.post('/api/keys', { name: 'cross-site' }, { headers: { 'sec-fetch-site': 'cross-site' } }), 403, 'csrf_failed');
      expect(await amysKeyCount()).to.equal(before);

      const own = await amy.post('/api/keys', { name: 'same-origin' }, { headers: { origin: tg.url, 'sec-fetch-site': 'same-origin' } });
      expect(own.status, own.text).to.equal(201);
      expect(await amysKeyCount()).to.equal(before + 1);
    });

    it('needs no CSRF token with a management token (Bearer tgm_…)', async () => {
      const token = newManagementToken();
      await tg.store.createSession({ accountId: amyId, hash: hashSecret(token), kind: 'token', name: 'script', expiresAt: null });
      const script = ApiClient.bearer(tg.url, token);
      const before = await amysKeyCount();
      const created = await script.post('/api/keys', { name: 'from-a-script' });
      expect(created.status, created.text).to.equal(201);
      expect(await amysKeyCount()).to.equal(before + 1);
      expect((await script.delete(`/api/keys/${created.body.key.id}`)).status).to.equal(200);
    });

    it('GET routes have no side effects and need no token', async () => {
      const snapshot = async () => ({
        keys: await tg.store.listKeys(),
        sessions: await tg.store.listSessions(amyId, 'session'),
        tokens: await tg.store.listSessions(amyId, 'token'),
        credits: await tg.store.listCredits(amyId),
        accounts: await tg.store.listAccounts(),
        codes: await tg.store.listRedemptionCodes(1000),
        charges: await tg.store.listCharges({ limit: 1000 }),
      });
      const before = await snapshot();
      const gets = [...SIGNED_IN_ROUTES.filter(([method]) => method === 'GET'), ...PUBLIC_ROUTES.filter(([method]) => method === 'GET')];
      for (const [, route] of gets) {
        const answer = await amy.get(route);
        expect(answer.status, `GET ${route}: ${answer.text}`).to.equal(200);
        expect(answer.cookies, `GET ${route} sets no cookie`).to.deep.equal([]);
      }
      for (const [, route] of SIGNED_IN_LOOKUPS) {
        const answer = await amy.get(route);
        expectError(answer, 404, 'not_found');
        expect(answer.cookies, `GET ${route} sets no cookie`).to.deep.equal([]);
      }
      // A GET on a state-changing path is not a way round the token.
      for (const route of ['/api/topup/redeem', '/api/keys/key_0000000000000000', '/api/tokens/ses_0000000000000000', '/api/account/password']) {
        expectError(await amy.get(`${route}?name=x&code=tg-AAAAAAAAAAAAAAAAAAAAAAAA`), 405, 'method_not_allowed');
      }
      expect(await snapshot()).to.deep.equal(before);
      expect((await amy.get('/api/session')).status, 'the session survived').to.equal(200);
    });
  });

  describe('credentials in the wrong place', () => {
    it('refuses API keys on /api: Authorization: Bearer sk-… and x-api-key are 401', async () => {
      const { secret } = await amy.createKey({ name: 'not-for-api' });
      const bearer = await send(tg.url, 'GET', '/api/session', { headers: { authorization: `Bearer ${secret}` } });
      expectError(bearer, 401, 'unauthenticated');
      expect(bearer.body.error.message).to.include('/v1');
      expectError(await send(tg.url, 'GET', '/api/keys', { headers: { 'x-api-key': secret } }), 401, 'unauthenticated');
      expectError(await send(tg.url, 'POST', '/api/keys', { body: { name: 'x' }, headers: { authorization: `Bearer ${secret}` } }), 401, 'unauthenticated');
      // Not even next to a valid cookie.
      expectError(await amy.get('/api/session', { headers: { 'x-api-key': secret } }), 401, 'unauthenticated');
      expectError(await send(tg.url, 'GET', '/api/session', { headers: { authorization: 'Basic YW15OnB3' } }), 401, 'unauthenticated');
      expectError(await send(tg.url, 'GET', '/api/session', { headers: { authorization: `Bearer tgm_${'A'.repeat(43)}` } }), 401, 'unauthenticated');
      // The key itself still works where it belongs.
      expect((await chat(tg.url, secret)).status).to.equal(200);
    });

    it('the console cookie and a management token do not authenticate /v1 (401 in the OpenAI shape)', async () => {
      const token = newManagementToken();
      await tg.store.createSession({ accountId: amyId, hash: hashSecret(token), kind: 'token', name: 'not-for-v1', expiresAt: null });
      expect((await ApiClient.bearer(tg.url, token).get('/api/session')).status, 'the token is valid on /api').to.equal(200);
      const upstreamBefore = fake.requests.length;
      const attempts: Record<string, string>[] = [{ cookie: `tollgate_session=${amy.cookie}` }, { authorization: `Bearer ${token}` }, { 'x-api-key': token }];
      for (const headers of attempts) {
        const answer = await chatWith(tg.url, headers);
        expect(answer.status, JSON.stringify(headers)).to.equal(401);
        expect(answer.json.error).to.deep.include({ type: 'invalid_request_error', code: 'invalid_api_key' });
        expect(answer.json.error.message).to.be.a('string');
      }
      expect(fake.requests).to.have.length(upstreamBefore);
    });
  });

  describe('output encoding', () => {
    it('returns a key named like HTML as the same string, in JSON (the API never renders HTML)', async () => {
      const name = '<img src=x onerror=alert(1)>';
      const created = await amy.post('/api/keys', { name });
      expect(created.status).to.equal(201);
      expect(created.headers.get('content-type')).to.equal('application/json; charset=utf-8');
      expect(created.body.key.name).to.equal(name);
      const list = await amy.get('/api/keys');
      expect(list.headers.get('content-type')).to.equal('application/json; charset=utf-8');
      expect(list.headers.get('x-content-type-options')).to.equal('nosniff');
      expect(list.body.keys.find((key: { id: string }) => key.id === created.body.key.id).name).to.equal(name);
      expect(list.text).to.include(JSON.stringify(name));
      expect(list.text).to.not.include('&lt;');
    });

    it('prefixes CSV cells that a spreadsheet would run as formulas with an apostrophe', async () => {
      const names = ['=HYPERLINK("https://evil.example","click")', '+SUM(1,2)', '-2+3', '@cmd', '=1+2'];
      const ids = new Map<string, string>();
      for (const name of names) {
        const { id, secret } = await amy.createKey({ name });
        ids.set(id, name);
        expect((await chat(tg.url, secret)).status).to.equal(200);
      }
      const plain = await amy.createKey({ name: '-5' });
      expect((await chat(tg.url, plain.secret)).status).to.equal(200);
      // Earlier: one request in the authorization tests, one with the key refused on /api.
      await chargesOf(tg.store, amyId, names.length + 3);

      const answer = await amy.get('/api/usage?format=csv');
      expect(answer.status).to.equal(200);
      const [header, ...rows] = parseCsv(answer.text);
      const keyId = header.indexOf('key_id');
      const keyName = header.indexOf('key_name');
      for (const [id, name] of ids) {
        const row = rows.find((cells) => cells[keyId] === id)!;
        expect(row, `a row of ${name}`).to.be.an('array');
        expect(row[keyName]).to.equal(`'${name}`);
      }
      expect(answer.text).to.include('"\'=HYPERLINK(""https://evil.example"",""click"")"');
      expect(rows.find((cells) => cells[keyId] === plain.id)![keyName], 'a plain number stays a number').to.equal('-5');
      for (const row of rows) expect(row[keyName]).to.not.match(/^[=+@-](?!\d+$)/);
    });
  });

  describe('security headers', () => {
    it('every /api answer carries no-store, nosniff and a CSP that allows nothing', async () => {
      const answers = [
        await send(tg.url, 'GET', '/api/meta'),
        await amy.get('/api/keys'),
        await amy.get('/api/usage?format=csv'),
        await send(tg.url, 'GET', '/api/session'),
        await send(tg.url, 'GET', '/api/no-such-route'),
        await send(tg.url, 'PUT', '/api/keys'),
        await amy.post('/api/keys', { name: 'x' }, { csrf: false }),
      ];
      expect(answers.map((answer) => answer.status)).to.deep.equal([200, 200, 200, 401, 404, 405, 403]);
      expectError(answers[4], 404, 'not_found');
      expectError(answers[5], 405, 'method_not_allowed');
      for (const answer of answers) expectApiHeaders(answer);
    });

    it('console pages carry a CSP with script-src \'self\' and frame-ancestors \'none\'', async () => {
      const built = existsSync(path.join(PACKAGE_ROOT, 'dist', 'console', 'index.html'));
      for (const page of ['/console', '/console/', '/console/keys', '/console/login']) {
        const answer = await send(tg.url, 'GET', page);
        expect(answer.status, page).to.equal(built ? 200 : 503);
        const csp = answer.headers.get('content-security-policy') ?? '';
        const directives = csp.split(';').map((directive) => directive.trim());
        expect(directives).to.include("script-src 'self'");
        expect(directives).to.include("frame-ancestors 'none'");
        expect(directives).to.include("default-src 'none'");
        expect(csp).to.not.include('unsafe-inline');
        expect(csp).to.not.include('unsafe-eval');
        expect(answer.headers.get('x-content-type-options')).to.equal('nosniff');
        expect(answer.headers.get('x-frame-options')).to.equal('DENY');
        if (built) expect(answer.headers.get('content-type')).to.equal('text/html; charset=utf-8');
      }
    });
  });

  describe('route coverage', () => {
    it('the suites\' route tables name every route of src/admin/routes', async () => {
      // Register every route file's routes on a bare router, as index.ts does, and list them.
      const router = new Router<ApiState>({ prefix: '/api' });
      const folder = path.join(PACKAGE_ROOT, 'dist', 'src', 'admin', 'routes');
      for (const file of readdirSync(folder).filter((name) => name.endsWith('.js'))) {
        const module = (await import(path.join(folder, file))) as Record<string, unknown>;
        for (const [name, value] of Object.entries(module)) {
          if (name.endsWith('Routes') && typeof value === 'function') (value as (r: Router<ApiState>, d: AdminDeps) => void)(router, {} as AdminDeps);
        }
      }
      const served = router.stack.flatMap((layer) => layer.methods.filter((method) => method !== 'HEAD').map((method) => `${method} ${layer.path}`));
      expect(served.length).to.be.above(20);
      const pattern = (route: string) => route.split('?')[0].replace(/\/(key|ses|acc|req)_0{16}|\/\{id\}/g, '/:id').replace(/\{(\w+)\}/g, ':$1');
      const tested = new Set([...SIGNED_IN_ROUTES, ...SIGNED_IN_LOOKUPS, ...ADMIN_ROUTES, ...PUBLIC_ROUTES].map(([method, route]) => `${method} ${pattern(route)}`));
      expect(served.filter((route) => !tested.has(route)), 'routes no table names').to.deep.equal([]);
      expect([...tested].filter((route) => !served.includes(route)), 'tables naming no route').to.deep.equal([]);
    });
  });
});
