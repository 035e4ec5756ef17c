/**
 * API keys through the management API: the secret shown once, the key working on /v1 until revoked,
 * validation naming the field, partial updates, and the owner's limits (models, spend, rate) taking
 * effect on /v1 without ever lifting the operator's.
 */
import { expect } from 'chai';
import { unitsToNano } from '../../src/billing/money';
import { hashSecret, newManagementToken } from '../../src/admin/secrets';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { ApiClient, expectError } from './api-client';
import { addAccount, chat, consoleYaml, PASSWORD, passwordHash } from './fixtures';

const KEY_FIELDS = ['id', 'name', 'prefix', 'last4', 'status', 'created_at', 'expires_at', 'revoked_at', 'spend_limit', 'spent', 'models', 'rate_limits', 'budget', 'session_budget', 'allowed_networks', 'operator_limits', 'playground'];

describe('management API: keys', function () {
  this.timeout(20_000);
  let fake: FakeUpstream;
  let tg: TestGateway;
  let kim: ApiClient;
  let kimId: string;

  before(async () => {
    await passwordHash();
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: consoleYaml(fake.url) });
    kimId = (await addAccount(tg.store, 'kim')).id;
    kim = await ApiClient.login(tg.url, 'kim', PASSWORD);
  });

  after(async () => {
    await tg?.stop();
    await fake?.close();
  });

  async function keyCount(): Promise<number> {
    return (await tg.store.listKeys({ accountId: kimId })).length;
  }

  it('creates a key (201) and shows its secret this once; the list never contains it', async () => {
    const created = await kim.post('/api/keys', { name: 'laptop' });
    expect(created.status, created.text).to.equal(201);
    const { key, secret } = created.body;
    expect(secret).to.match(/^sk-[A-Za-z0-9]{48}$/);
    expect(Object.keys(key).sort()).to.deep.equal([...KEY_FIELDS].sort());
    expect(key).to.deep.include({
      name: 'laptop',
      prefix: secret.slice(0, 7),
      last4: secret.slice(-4),
      status: 'active',
      expires_at: null,
      revoked_at: null,
      spend_limit: null,
      spent: '0',
      models: null,
      rate_limits: null,
      playground: false,
    });
    expect(key.id).to.match(/^key_/);
    expect(Date.parse(key.created_at)).to.be.closeTo(Date.now(), 5000);

    const list = await kim.get('/api/keys');
    expect(list.status).to.equal(200);
    expect(list.body.keys.map((listed: { id: string }) => listed.id)).to.include(key.id);
    expect(list.body.keys.find((listed: { id: string }) => listed.id === key.id)).to.deep.equal({ ...key, last_used_at: null, spent_today: "0", spent_month: "0" });
    expect(list.text).to.not.include(secret);
    expect(list.text).to.not.include(secret.slice(7, 30));
    for (const listed of list.body.keys) expect(listed).to.not.have.property('secret');
  });

  it('lists the newest key first', async () => {
    const older = await kim.createKey({ name: 'older' });
    const newer = await kim.createKey({ name: 'newer' });
    const ids = (await kim.get('/api/keys')).body.keys.map((listed: { id: string }) => listed.id);
    expect(ids.indexOf(newer.id)).to.be.below(ids.indexOf(older.id));
    expect(ids[0]).to.equal(newer.id);
  });

  it('makes a key that works on /v1 until it is revoked (DELETE), then 401', async () => {
    const { id, secret } = await kim.createKey({ name: 'short-lived' });
    const ok = await chat(tg.url, secret);
    expect(ok.status, JSON.stringify(ok.json)).to.equal(200);
    expect(fake.requests.at(-1)!.headers.authorization).to.not.include(secret);

    expectError(await kim.delete(`/api/keys/${id}`, { csrf: false }), 403, 'csrf_failed');
    expect((await chat(tg.url, secret)).status, 'still active after the refused DELETE').to.equal(200);

    const revoked = await kim.delete(`/api/keys/${id}`);
    expect(revoked.status, revoked.text).to.equal(200);
    expect(revoked.body.key).to.deep.include({ id, status: 'revoked' });
    expect(Date.parse(revoked.body.key.revoked_at)).to.be.closeTo(Date.now(), 5000);

    const refused = await chat(tg.url, secret);
    expect(refused.status).to.equal(401);
    expect(refused.json.error).to.deep.include({ type: 'invalid_request_error', code: 'invalid_api_key' });
    const listed = (await kim.get('/api/keys')).body.keys.find((key: { id: string }) => key.id === id);
    expect(listed.status).to.equal('revoked');

    // Revoking again changes nothing.
    const again = await kim.delete(`/api/keys/${id}`);
    expect(again.status).to.equal(200);
    expect(again.body.key.revoked_at).to.equal(revoked.body.key.revoked_at);
  });

  it("flags the playground's key (playground: true) in what it answers and in the list, and no other", async () => {
    const made = await kim.post('/api/playground/key', {});
    expect(made.status, made.text).to.equal(201);
    expect(made.body.key).to.deep.include({ name: 'Playground', playground: true, status: 'active' });
    // A key named Playground that lives past the hour is the owner's own: not flagged.
    const own = await kim.createKey({ name: 'Playground', expires_at: '2099-12-31' });
    expect(own.key.playground).to.equal(false);
    const listed = (await kim.get('/api/keys')).body.keys as { id: string; playground: boolean }[];
    expect(listed.filter((key) => key.playground).map((key) => key.id)).to.deep.equal([made.body.key.id]);

    // The next playground key replaces the first; the owner's key of the same name stays.
    const next = await kim.post('/api/playground/key', {});
    const active = (await kim.get('/api/keys')).body.keys.filter((key: { status: string }) => key.status === 'active') as { id: string; playground: boolean }[];
    expect(active.filter((key) => key.playground).map((key) => key.id)).to.deep.equal([next.body.key.id]);
    expect(active.map((key) => key.id)).to.include(own.id);
  });

  it('refuses by hand a key that would pass for the playground\'s (named Playground, expiring within the hour)', async () => {
    const before = await keyCount();
    const soon = new Date(Date.now() + 30 * 60 * 1000).toISOString();
    const answer = await kim.post('/api/keys', { name: 'Playground', expires_at: soon });
    expectError(answer, 400, 'invalid_request', 'name');
    expect(answer.body.error.message).to.include('playground');
    expect(await keyCount()).to.equal(before);
    // Any other name with the same expiry is fine.
    expect((await kim.post('/api/keys', { name: 'quick test', expires_at: soon })).status).to.equal(201);
  });

  it('answers 404 for a key id that does not exist', async () => {
    expectError(await kim.patch('/api/keys/key_0123456789abcdef', { spend_limit: '1' }), 404, 'not_found');
    expectError(await kim.delete('/api/keys/key_0123456789abcdef'), 404, 'not_found');
  });

  it('takes an expiry, a spend limit, models and rate limits, and shows them back', async () => {
    const answer = await kim.post('/api/keys', {
      name: 'ci',
      expires_at: '2099-12-31',
      spend_limit: '5.25',
      models: ['gpt-free', 'gpt-priced', 'gpt-free'],
      rate_limits: { rpm: 60, tpm: 100000, concurrency: 4 },
    });
    expect(answer.status, answer.text).to.equal(201);
    expect(answer.body.key).to.deep.include({
      name: 'ci',
      expires_at: '2099-12-31T23:59:59.999Z',
      spend_limit: '5.25',
      models: ['gpt-free', 'gpt-priced'],
      rate_limits: { rpm: 60, tpm: 100000, concurrency: 4 },
    });
    const stored = (await tg.store.listKeys({ accountId: kimId })).find((key) => key.id === answer.body.key.id)!;
    expect(stored.spendLimit).to.equal(5_250_000_000n);
  });

  it('refuses invalid fields with 400 naming the field, and creates nothing', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ name: 'x'.repeat(61) }, 'name'],
      [{ name: 42 }, 'name'],
      [{ expires_at: '2001-01-01' }, 'expires_at'],
      [{ expires_at: 'someday' }, 'expires_at'],
      [{ spend_limit: '-5' }, 'spend_limit'],
      [{ spend_limit: '0' }, 'spend_limit'],
      [{ spend_limit: 'five' }, 'spend_limit'],
      [{ spend_limit: '0.0000000001' }, 'spend_limit'],
      [{ spend_limit: true }, 'spend_limit'],
      [{ models: ['no-such-model'] }, 'models'],
      [{ models: 'gpt-free' }, 'models'],
      [{ models: [1] }, 'models'],
      [{ rate_limits: 'fast' }, 'rate_limits'],
      [{ rate_limits: [60] }, 'rate_limits'],
      [{ rate_limits: { rps: 5 } }, 'rate_limits'],
      [{ rate_limits: { rpm: -1 } }, 'rate_limits.rpm'],
      [{ rate_limits: { rpm: 1.5 } }, 'rate_limits.rpm'],
      [{ rate_limits: { tpm: '100' } }, 'rate_limits.tpm'],
      [{ rate_limits: { concurrency: 1e12 } }, 'rate_limits.concurrency'],
    ];
    const before = await keyCount();
    for (const [body, field] of cases) {
      expectError(await kim.post('/api/keys', body), 400, 'invalid_request', field);
    }
    expectError(await kim.post('/api/keys', '[]'), 400, 'invalid_request');
    expect(await keyCount()).to.equal(before);
  });

  it('PATCH changes only the fields given; null clears one', async () => {
    const { id } = await kim.createKey({ name: 'patched', spend_limit: '1', models: ['gpt-free'], rate_limits: { rpm: 10 } });

    const spend = await kim.patch(`/api/keys/${id}`, { spend_limit: '2.5' });
    expect(spend.status, spend.text).to.equal(200);
    expect(spend.body.key).to.deep.include({ id, name: 'patched', spend_limit: '2.5', models: ['gpt-free'], rate_limits: { rpm: 10 } });

    const models = await kim.patch(`/api/keys/${id}`, { models: null });
    expect(models.body.key).to.deep.include({ spend_limit: '2.5', models: null, rate_limits: { rpm: 10 } });

    const limits = await kim.patch(`/api/keys/${id}`, { rate_limits: { tpm: 5000, concurrency: 0 } });
    expect(limits.body.key).to.deep.include({ spend_limit: '2.5', models: null, rate_limits: { tpm: 5000 } });

    const cleared = await kim.patch(`/api/keys/${id}`, { spend_limit: null, rate_limits: null });
    expect(cleared.body.key).to.deep.include({ spend_limit: null, models: null, rate_limits: null });

    expectError(await kim.patch(`/api/keys/${id}`, { spend_limit: '-1' }), 400, 'invalid_request', 'spend_limit');
    expectError(await kim.patch(`/api/keys/${id}`, { models: ['gpt-free', 'nope'] }), 400, 'invalid_request', 'models');
    expectError(await kim.patch(`/api/keys/${id}`, { rate_limits: { rpm: 'x' } }), 400, 'invalid_request', 'rate_limits.rpm');
    expectError(await kim.patch(`/api/keys/${id}`, { spend_limit: '3' }, { csrf: false }), 403, 'csrf_failed');
    // A refused PATCH changes nothing, not even the fields that were valid.
    expectError(await kim.patch(`/api/keys/${id}`, { spend_limit: '9', models: ['nope'] }), 400, 'invalid_request', 'models');
    const after = (await kim.get('/api/keys')).body.keys.find((key: { id: string }) => key.id === id);
    expect(after).to.deep.include({ spend_limit: null, models: null, rate_limits: null });
  });

  it('applies the key\'s model list on /v1', async () => {
    const { secret } = await kim.createKey({ name: 'free-only', models: ['gpt-free'] });
    expect((await chat(tg.url, secret, 'gpt-free')).status).to.equal(200);
    const refused = await chat(tg.url, secret, 'gpt-priced');
    expect(refused.status).to.equal(403);
    expect(refused.json.error.code).to.equal('model_not_allowed');
  });

  it('applies the key\'s spend limit on /v1', async () => {
    await tg.store.credit({ accountId: kimId, amount: unitsToNano('10'), kind: 'admin', actor: 'test', note: 'funds' });
    const { id, secret } = await kim.createKey({ name: 'tiny-budget', spend_limit: '0.000001' });
    const refused = await chat(tg.url, secret, 'gpt-priced');
    expect(refused.status, JSON.stringify(refused.json)).to.equal(402);
    expect(refused.json.error.code).to.equal('key_spend_limit_reached');
    expect((await kim.patch(`/api/keys/${id}`, { spend_limit: null })).status).to.equal(200);
    expect((await chat(tg.url, secret, 'gpt-priced')).status, 'without the limit').to.equal(200);
  });

  it('applies rate limits the owner sets (rpm 1: the second request is 429), also on a key already in use', async () => {
    const { id, secret } = await kim.createKey({ name: 'limited-later' });
    for (let i = 0; i < 3; i += 1) expect((await chat(tg.url, secret)).status, 'no limit yet').to.equal(200);
    expect((await kim.patch(`/api/keys/${id}`, { rate_limits: { rpm: 1 } })).status).to.equal(200);
    expect((await chat(tg.url, secret)).status).to.equal(200);
    const limited = await chat(tg.url, secret);
    expect(limited.status).to.equal(429);
    expect(Number(limited.headers.get('retry-after'))).to.be.within(1, 60);
    expect(limited.json.error.message).to.include('1 requests per minute');

    // Set at creation, too.
    const fresh = await kim.createKey({ name: 'limited-at-birth', rate_limits: { rpm: 1 } });
    expect((await chat(tg.url, fresh.secret)).status).to.equal(200);
    expect((await chat(tg.url, fresh.secret)).status).to.equal(429);
  });

  describe('under an operator limit (plugins.rate-limit.per_key.rpm: 1)', () => {
    let limitedGateway: TestGateway;
    let owner: ApiClient;

    before(async () => {
      limitedGateway = await startTestGateway({ yaml: consoleYaml(fake.url, { plugins: '  rate-limit: { per_key: { rpm: 1 } }' }) });
      const account = await limitedGateway.store.createAccount({ name: 'scripted', role: 'user' });
      const token = newManagementToken();
      await limitedGateway.store.createSession({ accountId: account.id, hash: hashSecret(token), kind: 'token', name: 'setup', expiresAt: null });
      owner = ApiClient.bearer(limitedGateway.url, token);
    });

    after(async () => limitedGateway?.stop());

    it('an owner\'s higher limit does not lift the operator\'s: the second request is still 429', async () => {
      const { secret, key } = await owner.createKey({ name: 'wants-more', rate_limits: { rpm: 100 } });
      expect(key.rate_limits).to.deep.equal({ rpm: 100 });
      expect((await chat(limitedGateway.url, secret)).status).to.equal(200);
      const limited = await chat(limitedGateway.url, secret);
      expect(limited.status).to.equal(429);
      expect(limited.json.error.message).to.include('1 requests per minute');
    });
  });
});
