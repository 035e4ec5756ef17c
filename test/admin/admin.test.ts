/**
 * The administrators' routes: accounts (list with balances, create, disable), credits with a note,
 * redemption codes (generate as JSON or CSV, list with status, export), providers with their breaker
 * state; users get 403 on every one. Also the public routes (meta, prices), and that no answer ever
 * carries a provider key.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { hashSecret, newManagementToken } from '../../src/admin/secrets';
import { unitsToNano } from '../../src/billing/money';
import { generateRedemptionCode, hashRedemptionCode } from '../../src/billing/redemption';
import { PACKAGE_ROOT } from '../../src/paths';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { PROVIDER_SENTINEL, startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { anthropicMessage, openaiError } from '../helpers/upstream-replies';
import { ApiClient, expectError, send } from './api-client';
import { ADMIN_ROUTES, addAccount, chat, consoleYaml, messages, PASSWORD, passwordHash, PRICES, waitFor } from './fixtures';

const ACCOUNT_FIELDS = ['id', 'name', 'email', 'role', 'disabled', 'created_at', 'budget', 'session_budget'];
const CODE_PATTERN = /^tg-[A-Z2-7]{24}$/;

describe('management API: administrators', function () {
  this.timeout(20_000);
  let fake: FakeUpstream;
  let tg: TestGateway;
  let root: ApiClient;
  let uma: ApiClient;
  let dan: ApiClient;
  let rootId: string;
  let umaId: string;
  let danId: string;

  before(async () => {
    await passwordHash();
    fake = await startFakeUpstream();
    tg = await startTestGateway({
      yaml: consoleYaml(fake.url, {
        upstream: '{ failover: { max_attempts: 1 }, breaker: { volume_threshold: 2, error_threshold_percent: 50, reset_timeout_ms: 60000, rolling_window_ms: 60000 } }',
      }),
    });
    rootId = (await addAccount(tg.store, 'root', 'admin', 'root@example.com')).id;
    umaId = (await addAccount(tg.store, 'uma')).id;
    danId = (await addAccount(tg.store, 'dan')).id;
    [root, uma] = await Promise.all([ApiClient.login(tg.url, 'root', PASSWORD), ApiClient.login(tg.url, 'uma', PASSWORD)]);
    dan = await ApiClient.login(tg.url, 'dan', PASSWORD);
  });

  after(async () => {
    await tg?.stop();
    await fake?.close();
  });

  describe('public routes', () => {
    it('GET /api/meta tells whether sign-up is open and the version', async () => {
      const { version } = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string };
      const answer = await send(tg.url, 'GET', '/api/meta');
      expect(answer.status).to.equal(200);
      expect(answer.body).to.deep.equal({ signup: false, version, currency: 'usd' });
    });

    it('GET /api/prices lists gateway.yaml\'s models with prices as decimal strings, to anyone', async () => {
      const NO_IMAGE_PRICES = { image_input: '0', image_output: '0', per_image: {} };
      const answer = await send(tg.url, 'GET', '/api/prices');
      expect(answer.status).to.equal(200);
      expect(answer.body).to.deep.equal({
        models: [
          { model: 'gpt-priced', family: 'openai', kind: 'text', free: false, available: true, price: { ...PRICES['gpt-priced'], ...NO_IMAGE_PRICES }, max_output_tokens: 1000, description: 'A priced test model' },
          { model: 'claude-priced', family: 'anthropic', kind: 'text', free: false, available: true, price: { ...PRICES['claude-priced'], ...NO_IMAGE_PRICES }, max_output_tokens: 2000, description: null },
          { model: 'gpt-free', family: 'openai', kind: 'text', free: true, available: true, price: null, max_output_tokens: answer.body.models[2].max_output_tokens, description: null },
        ],
      });
      expect(answer.body.models[2].max_output_tokens).to.be.a('number');
    });
  });

  describe('for users', () => {
    it('answers 403 forbidden on every /api/admin route, and changes nothing', async () => {
      const accounts = await tg.store.listAccounts();
      const codes = await tg.store.listRedemptionCodes(1000);
      const token = newManagementToken();
      await tg.store.createSession({ accountId: umaId, hash: hashSecret(token), kind: 'token', name: null, expiresAt: null });
      for (const client of [uma, ApiClient.bearer(tg.url, token)]) {
        for (const [method, route, body] of ADMIN_ROUTES) {
          const answer = await client.request(method, route.replace('{id}', umaId), { body });
          expectError(answer, 403, 'forbidden');
          expect(answer.text).to.not.match(/tg-[A-Z2-7]{24}/);
        }
      }
      expect(await tg.store.listAccounts()).to.deep.equal(accounts);
      expect(await tg.store.listRedemptionCodes(1000)).to.deep.equal(codes);
      expect(await tg.store.listCredits(umaId)).to.deep.equal([]);
      expect((await tg.store.findAccountById(umaId))!.disabled).to.equal(false);
    });
  });

  describe('accounts', () => {
    it('lists every account with its balance and held funds', async () => {
      await tg.store.credit({ accountId: umaId, amount: unitsToNano('4.2'), kind: 'admin', actor: 'test', note: null });
      const answer = await root.get('/api/admin/accounts');
      expect(answer.status).to.equal(200);
      const byName = new Map<string, any>(answer.body.accounts.map((account: { name: string }) => [account.name, account]));
      expect([...byName.keys()]).to.include.members(['root', 'uma', 'dan']);
      expect(Object.keys(byName.get('uma')).sort()).to.deep.equal([...ACCOUNT_FIELDS, 'balance', 'held', 'last_request_at'].sort());
      expect(byName.get('uma')).to.deep.include({ id: umaId, role: 'user', disabled: false, balance: '4.2', held: '0', last_request_at: null });
      expect(answer.body.total).to.equal(answer.body.accounts.length);
      expect(byName.get('root')).to.deep.include({ id: rootId, role: 'admin', email: 'root@example.com', balance: '0' });
      expect(answer.text).to.not.include('scrypt');
    });

    it('shows the same balance and held funds as the account itself sees, also while a request holds funds', async () => {
      const spender = await tg.store.createAccount({ name: 'spender', role: 'user' });
      await tg.store.credit({ accountId: spender.id, amount: unitsToNano('1'), kind: 'admin', actor: 'test', note: null });
      const key = await tg.createKey({ accountId: spender.id, name: 'slow' });
      const token = newManagementToken();
      await tg.store.createSession({ accountId: spender.id, hash: hashSecret(token), kind: 'token', name: null, expiresAt: null });
      const own = ApiClient.bearer(tg.url, token);
      const listed = async () => (await root.get('/api/admin/accounts')).body.accounts.find((account: { id: string }) => account.id === spender.id);

      const upstreamBefore = fake.requests.length;
      fake.enqueue({ delayMs: 800, then: anthropicMessage({ inputTokens: 10, outputTokens: 10 }) });
      const slow = messages(tg.url, key.key, 'claude-priced');
      await fake.waitForRequests(upstreamBefore + 1);
      const mine = (await own.get('/api/account')).body;
      expect(mine.held, 'funds are held while the request runs').to.not.equal('0');
      expect(await listed()).to.deep.include({ balance: mine.balance, held: mine.held });
      expect((await slow).status).to.equal(200);

      const after = await waitFor(() => own.get('/api/account'), (answer) => answer.body.held === '0', 'the hold released');
      // 10 × 3,000 + 10 × 15,000 nano-units.
      expect(after.body.balance).to.equal('0.99982');
      expect(await listed()).to.deep.include({ balance: '0.99982', held: '0' });
    });

    it('creates an account (201) that can log in; the e-mail is stored lower-cased', async () => {
      const answer = await root.post('/api/admin/accounts', { name: 'newhire', email: 'New.Hire@Example.com', password: 'a long first password', role: 'user' });
      expect(answer.status, answer.text).to.equal(201);
      expect(Object.keys(answer.body.account).sort()).to.deep.equal([...ACCOUNT_FIELDS].sort());
      expect(answer.body.account).to.deep.include({ name: 'newhire', email: 'new.hire@example.com', role: 'user', disabled: false });
      const client = await ApiClient.login(tg.url, 'new.hire@example.com', 'a long first password');
      expect((await client.get('/api/session')).body.account.id).to.equal(answer.body.account.id);
      const listed = (await root.get('/api/admin/accounts')).body.accounts.find((account: { name: string }) => account.name === 'newhire');
      expect(listed).to.deep.include({ id: answer.body.account.id, balance: '0' });
    });

    it('creates administrators when asked', async () => {
      const answer = await root.post('/api/admin/accounts', { name: 'second-admin', password: 'another long password', role: 'admin' });
      expect(answer.status, answer.text).to.equal(201);
      expect(answer.body.account).to.deep.include({ role: 'admin', email: null });
      expect((await tg.store.findAccountByName('second-admin'))!.role).to.equal('admin');
    });

    it('answers 409 naming the field for a taken name or e-mail', async () => {
      const [name, email] = await Promise.all([
        root.post('/api/admin/accounts', { name: 'uma', password: 'long enough password' }),
        root.post('/api/admin/accounts', { name: 'fresh-name', email: 'ROOT@example.com', password: 'long enough password' }),
      ]);
      expectError(name, 409, 'conflict', 'name');
      expectError(email, 409, 'conflict', 'email');
      expect(await tg.store.findAccountByName('fresh-name')).to.equal(null);
    });

    it('answers 400 naming the field for a bad name, e-mail, password or role', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ name: 'short-pw', password: 'too short' }, 'password'],
        [{ name: 'short-pw' }, 'password'],
        [{ name: 'x', password: 'long enough password' }, 'name'],
        [{ name: 'bad/name', password: 'long enough password' }, 'name'],
        [{ name: 'bad-email', email: 'nope', password: 'long enough password' }, 'email'],
        [{ name: 'bad-role', password: 'long enough password', role: 'root' }, 'role'],
      ];
      const before = (await tg.store.listAccounts()).length;
      for (const [body, field] of cases) expectError(await root.post('/api/admin/accounts', body), 400, 'invalid_request', field);
      expectError(await root.post('/api/admin/accounts', { name: 'no-csrf', password: 'long enough password' }, { csrf: false }), 403, 'csrf_failed');
      expect(await tg.store.listAccounts()).to.have.length(before);
    });

    it('disables an account: its session ends (401), its key 401 on /v1, its login 403; enabling restores the key and the login', async () => {
      const { secret } = await dan.createKey({ name: 'dans-key' });
      expect((await chat(tg.url, secret)).status).to.equal(200);

      const disabled = await root.patch(`/api/admin/accounts/${danId}`, { disabled: true });
      expect(disabled.status, disabled.text).to.equal(200);
      expect(disabled.body.account).to.deep.include({ id: danId, name: 'dan', disabled: true });

      expectError(await dan.get('/api/session'), 401, 'unauthenticated');
      expectError(await dan.get('/api/keys'), 401, 'unauthenticated');
      expectError(await dan.post('/api/keys', { name: 'while-disabled' }), 401, 'unauthenticated');
      const refused = await chat(tg.url, secret);
      expect(refused.status).to.equal(401);
      expect(refused.json.error.code).to.equal('invalid_api_key');
      expectError((await ApiClient.tryLogin(tg.url, 'dan', PASSWORD)).answer, 403, 'forbidden');
      const listed = (await root.get('/api/admin/accounts')).body.accounts.find((account: { id: string }) => account.id === danId);
      expect(listed.disabled).to.equal(true);

      const enabled = await root.patch(`/api/admin/accounts/${danId}`, { disabled: false });
      expect(enabled.body.account.disabled).to.equal(false);
      // The session ended for good; a new login works.
      expectError(await dan.get('/api/session'), 401, 'unauthenticated');
      dan = await ApiClient.login(tg.url, 'dan', PASSWORD);
      expect((await dan.get('/api/session')).status).to.equal(200);
      expect((await chat(tg.url, secret)).status).to.equal(200);
      expect((await tg.store.listKeys({ accountId: danId })).map((key) => key.name)).to.deep.equal(['dans-key']);
    });

    it('will not let an administrator disable their own account', async () => {
      expectError(await root.patch(`/api/admin/accounts/${rootId}`, { disabled: true }), 400, 'invalid_request', 'disabled');
      expect((await tg.store.findAccountById(rootId))!.disabled).to.equal(false);
      expect((await root.get('/api/session')).status).to.equal(200);
    });

    it('answers 404 for an unknown account and 400 for a disabled flag that is not a boolean', async () => {
      expectError(await root.patch('/api/admin/accounts/acc_0000000000000000', { disabled: true }), 404, 'not_found');
      expectError(await root.patch(`/api/admin/accounts/${umaId}`, { disabled: 'yes' }), 400, 'invalid_request', 'disabled');
      expectError(await root.patch(`/api/admin/accounts/${umaId}`, {}), 400, 'invalid_request', 'disabled');
      expect((await tg.store.findAccountById(umaId))!.disabled).to.equal(false);
    });
  });

  describe('credits', () => {
    it('refuses amounts that are not positive decimals with at most nine places, up to a billion', async () => {
      const before = await tg.store.listCredits(umaId);
      for (const amount of ['-1', '0', '0.0000000001', '1e12', 'abc', '', ' ', '1,5', '1000000000.000000001', 1e30, -5, 0, null, true, ['1']]) {
        const answer = await root.post(`/api/admin/accounts/${umaId}/credits`, { amount, note: 'bad' });
        expectError(answer, 400, 'invalid_request', 'amount');
      }
      expectError(await root.post(`/api/admin/accounts/${umaId}/credits`, { note: 'no amount' }), 400, 'invalid_request', 'amount');
      expectError(await root.post(`/api/admin/accounts/${umaId}/credits`, { amount: '5' }), 400, 'invalid_request', 'note');
      expectError(await root.post(`/api/admin/accounts/${umaId}/credits`, { amount: '5', note: '   ' }), 400, 'invalid_request', 'note');
      expectError(await root.post('/api/admin/accounts/acc_0000000000000000/credits', { amount: '5', note: 'x' }), 404, 'not_found');
      expectError(await root.post(`/api/admin/accounts/${umaId}/credits`, { amount: '5', note: 'x' }, { csrf: false }), 403, 'csrf_failed');
      expect(await tg.store.listCredits(umaId)).to.deep.equal(before);
    });

    it('credits exactly the amount, as kind admin with the admin\'s name and the note', async () => {
      const before = (await tg.store.balance(umaId)).balance;
      const answer = await root.post(`/api/admin/accounts/${umaId}/credits`, { amount: '12.345678901', note: 'invoice 42' });
      expect(answer.status, answer.text).to.equal(201);
      expect(answer.body.credit).to.deep.include({ amount: '12.345678901', kind: 'admin', actor: 'root', note: 'invoice 42' });
      const after = (await tg.store.balance(umaId)).balance;
      expect(after - before).to.equal(12_345_678_901n);
      expect(answer.body.balance).to.equal('16.545678901');

      const [latest] = await tg.store.listCredits(umaId);
      expect(latest).to.deep.include({ id: answer.body.credit.id, amount: 12_345_678_901n, kind: 'admin', actor: 'root', note: 'invoice 42' });
      expect((await uma.get('/api/credits')).body.credits[0]).to.deep.equal(answer.body.credit);
      expect((await uma.get('/api/account')).body.balance).to.equal('16.545678901');

      // A JSON number is taken too, and the largest amount allowed is a billion.
      const number = await root.post(`/api/admin/accounts/${umaId}/credits`, { amount: 2.5, note: 'as a number' });
      expect(number.body.credit.amount).to.equal('2.5');
      const most = await root.post(`/api/admin/accounts/${danId}/credits`, { amount: '1000000000', note: 'max' });
      expect(most.status).to.equal(201);
      expect(most.body.balance).to.equal('1000000000');
    });
  });

  describe('redemption codes', () => {
    const issued: string[] = [];

    it('generates codes (201) with count, amount and expiry, showing their texts once', async () => {
      const expiresAt = new Date(Date.now() + 30 * 86_400_000).toISOString();
      const answer = await root.post('/api/admin/redemption-codes', { count: 3, amount: '5', expires_at: expiresAt });
      expect(answer.status, answer.text).to.equal(201);
      const { codes } = answer.body;
      expect(codes).to.have.length(3);
      for (const code of codes) {
        expect(Object.keys(code).sort()).to.deep.equal(['amount', 'code', 'expires_at', 'id']);
        expect(code.code).to.match(CODE_PATTERN);
        expect(code).to.deep.include({ amount: '5', expires_at: expiresAt });
        issued.push(code.code);
      }
      expect(new Set(codes.map((code: { code: string }) => code.code)).size).to.equal(3);
      expect(new Set(codes.map((code: { id: string }) => code.id)).size).to.equal(3);
      // The store keeps only the hashes: each text redeems (here: is known to the store).
      const stored = await tg.store.listRedemptionCodes(1000);
      for (const code of codes) expect(stored.find((record) => record.id === code.id)!.amount).to.equal(unitsToNano('5'));
    });

    it('generates codes as a CSV download with id,code,amount,expires_at', async () => {
      const answer = await root.post('/api/admin/redemption-codes?format=csv', { count: 2, amount: '2.5' });
      expect(answer.status, answer.text).to.equal(201);
      expect(answer.headers.get('content-type')).to.equal('text/csv; charset=utf-8');
      expect(answer.headers.get('content-disposition')).to.match(/^attachment; filename="tollgate-new-codes-\d{4}-\d{2}-\d{2}\.csv"$/);
      const lines = answer.text.split('\r\n');
      expect(lines.pop()).to.equal('');
      expect(lines[0]).to.equal('id,code,amount,expires_at');
      expect(lines).to.have.length(3);
      for (const line of lines.slice(1)) {
        const [id, code, amount, expiresAt] = line.split(',');
        expect(id).to.be.a('string').and.not.equal('');
        expect(code).to.match(CODE_PATTERN);
        expect(amount).to.equal('2.5');
        expect(expiresAt).to.equal('');
        issued.push(code);
      }
    });

    it('refuses a bad count, amount or expiry with 400 naming the field', async () => {
      const before = (await tg.store.listRedemptionCodes(100_000)).length;
      const cases: [Record<string, unknown>, string][] = [
        [{ count: 0, amount: '5' }, 'count'],
        [{ count: 1001, amount: '5' }, 'count'],
        [{ count: '3', amount: '5' }, 'count'],
        [{ count: 1.5, amount: '5' }, 'count'],
        [{ amount: '5' }, 'count'],
        [{ count: 1, amount: '0' }, 'amount'],
        [{ count: 1, amount: '-5' }, 'amount'],
        [{ count: 1 }, 'amount'],
        [{ count: 1, amount: '5', expires_at: '2001-01-01' }, 'expires_at'],
        [{ count: 1, amount: '5', expires_at: 'soon' }, 'expires_at'],
      ];
      for (const [body, field] of cases) expectError(await root.post('/api/admin/redemption-codes', body), 400, 'invalid_request', field);
      expect(await tg.store.listRedemptionCodes(100_000)).to.have.length(before);
    });

    it('lists codes with their status (unused, redeemed, expired) and never their texts', async () => {
      const redeemed = await uma.post('/api/topup/redeem', { code: issued[0] });
      expect(redeemed.status, redeemed.text).to.equal(200);
      const expiredText = generateRedemptionCode();
      const [expired] = await tg.store.createRedemptionCodes({
        hashes: [hashRedemptionCode(expiredText)],
        amount: unitsToNano('1'),
        createdBy: 'root',
        expiresAt: new Date(Date.now() - 60_000),
      });

      const answer = await root.get('/api/admin/redemption-codes');
      expect(answer.status).to.equal(200);
      const { codes } = answer.body;
      expect(codes).to.have.length(6);
      for (const code of codes) {
        expect(Object.keys(code).sort()).to.deep.equal(['amount', 'created_at', 'created_by', 'expires_at', 'id', 'redeemed_at', 'redeemed_by', 'redeemed_by_name', 'status']);
      }
      expect(codes[0]).to.deep.include({ id: expired.id, status: 'expired', amount: '1', redeemed_by: null });
      const statuses = codes.map((code: { status: string }) => code.status).sort();
      expect(statuses).to.deep.equal(['expired', 'redeemed', 'unused', 'unused', 'unused', 'unused']);
      const used = codes.find((code: { status: string }) => code.status === 'redeemed');
      expect(used).to.deep.include({ amount: '5', created_by: 'root', redeemed_by: umaId, redeemed_by_name: 'uma' });
      expect(Date.parse(used.redeemed_at)).to.be.closeTo(Date.now(), 5000);
      for (const text of [...issued, expiredText]) expect(answer.text).to.not.include(text);

      expect((await root.get('/api/admin/redemption-codes?limit=2')).body.codes).to.deep.equal(codes.slice(0, 2));
      expectError(await root.get('/api/admin/redemption-codes?limit=0'), 400, 'invalid_request', 'limit');
    });

    it('exports the list as CSV, without the code texts', async () => {
      const answer = await root.get('/api/admin/redemption-codes?format=csv');
      expect(answer.status).to.equal(200);
      expect(answer.headers.get('content-type')).to.equal('text/csv; charset=utf-8');
      expect(answer.headers.get('content-disposition')).to.match(/^attachment; filename="tollgate-codes-\d{4}-\d{2}-\d{2}\.csv"$/);
      const lines = answer.text.split('\r\n');
      expect(lines.pop()).to.equal('');
      expect(lines[0]).to.equal('id,amount,status,created_at,created_by,expires_at,redeemed_by,redeemed_at');
      expect(lines).to.have.length(7);
      const json = (await root.get('/api/admin/redemption-codes')).body.codes;
      expect(lines.slice(1).map((line) => line.split(',')[0])).to.deep.equal(json.map((code: { id: string }) => code.id));
      expect(lines.slice(1).map((line) => line.split(',')[2]).sort()).to.deep.equal(['expired', 'redeemed', 'unused', 'unused', 'unused', 'unused']);
      for (const text of issued) expect(answer.text).to.not.include(text);
    });
  });

  describe('providers', () => {
    it('lists each provider with its breaker state and counts, and opens a failing provider\'s breaker', async () => {
      const quiet = await root.get('/api/admin/providers');
      expect(quiet.status).to.equal(200);
      const byName = (answer: typeof quiet) => new Map<string, any>(answer.body.providers.map((provider: { name: string }) => [provider.name, provider]));
      expect([...byName(quiet).keys()].sort()).to.deep.equal(['anthropic', 'openai']);
      const anthropic = byName(quiet).get('anthropic');
      expect(Object.keys(anthropic).sort()).to.deep.equal(['breaker', 'configured', 'error_rate', 'failures', 'name', 'protocol', 'requests', 'window_seconds']);
      // One request went to anthropic (the held-funds test), all well.
      expect(anthropic).to.deep.equal({ name: 'anthropic', protocol: 'anthropic', configured: true, breaker: 'closed', window_seconds: 60, requests: 1, failures: 0, error_rate: 0 });
      const openaiBefore = byName(quiet).get('openai');
      expect(openaiBefore).to.deep.include({ protocol: 'openai', breaker: 'closed', failures: 0, error_rate: 0 });

      // Failures until the breaker opens (volume_threshold 2, more than 50% failed in the window).
      const key = await tg.createKey({ accountId: umaId, name: 'breaker' });
      let failed = 0;
      let tripped = byName(quiet);
      while (tripped.get('openai').breaker !== 'open') {
        expect(failed, 'the breaker opens within 5 failures').to.be.below(5);
        fake.enqueue(openaiError(500, 'boom'));
        expect((await chat(tg.url, key.key)).status).to.be.at.least(500);
        failed += 1;
        tripped = byName(await root.get('/api/admin/providers'));
      }
      expect(tripped.get('openai')).to.deep.include({ breaker: 'open', window_seconds: 60, failures: failed });
      const requests = openaiBefore.requests + failed;
      expect(tripped.get('openai').requests).to.equal(requests);
      expect(tripped.get('openai').error_rate).to.equal(Math.round((failed / requests) * 1000) / 1000);
      expect(tripped.get('anthropic').breaker).to.equal('closed');
      // Open means skipped: the next request does not reach the provider.
      const seen = fake.requests.length;
      expect((await chat(tg.url, key.key)).status).to.be.at.least(500);
      expect(fake.requests).to.have.length(seen);
      expect(JSON.stringify(tripped)).to.not.include('base_url');
    });
  });

  describe('provider keys', () => {
    it('appear in no answer of the management API', async () => {
      for (const route of ['/api/admin/providers', '/api/prices', '/api/meta', '/api/admin/accounts', '/api/session', '/api/account']) {
        const answer = await root.get(route);
        expect(answer.status).to.equal(200);
      }
      expect(ApiClient.seen.length).to.be.above(50);
      for (const answer of ApiClient.seen) {
        expect(answer.text).to.not.include(PROVIDER_SENTINEL);
        expect(JSON.stringify([...answer.headers])).to.not.include(PROVIDER_SENTINEL);
      }
    });
  });
});
