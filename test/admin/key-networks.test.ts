/**
 * Per-key allowed networks behind one trusted proxy hop, and an operator's limits that the key's
 * owner can tighten but never loosen or clear.
 */
import { expect } from 'chai';
import { createKeyCommand, setKeyLimitsCommand } from '../../src/cli/keys';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { ApiClient, expectError } from './api-client';
import { addAccount, chatWith, consoleYaml, PASSWORD, passwordHash } from './fixtures';

describe('keys: allowed networks and operator limits', function () {
  this.timeout(60_000);
  let upstream: FakeUpstream;
  let tg: TestGateway;
  let owner: ApiClient;

  before(async () => {
    await passwordHash();
    upstream = await startFakeUpstream();
    tg = await startTestGateway({
      yaml: consoleYaml(upstream.url, { server: 'trust_proxy: true, trusted_proxy_hops: 1', plugins: '  rate-limit: { per_key: { rpm: 1000 } }' }),
    });
    await addAccount(tg.store, 'netowner');
    owner = await ApiClient.login(tg.url, 'netowner', PASSWORD);
  });

  after(async () => {
    await tg?.stop();
    await upstream?.close();
  });

  /** A chat request as the proxy in front of Tollgate forwards it: `forwarded` is X-Forwarded-For as received. */
  const from = (key: string, forwarded: string, model = 'gpt-free') => chatWith(tg.url, { authorization: `Bearer ${key}`, 'x-forwarded-for': forwarded }, model);

  async function messagesFrom(key: string, forwarded: string) {
    const res = await fetch(`${tg.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', 'x-forwarded-for': forwarded },
      body: JSON.stringify({ model: 'claude-priced', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    });
    return { status: res.status, json: (await res.json()) as any };
  }

  it('lets a key limited to 10.0.0.0/8 and 2001:db8::/32 in from those networks only, naming the refused address', async () => {
    const { secret, key } = await owner.createKey({ name: 'office', allowed_networks: ['10.0.0.0/8', '2001:db8::/32'] });
    expect(key.allowed_networks).to.deep.equal(['10.0.0.0/8', '2001:db8::/32']);
    expect((await from(secret, '10.1.2.3')).status).to.equal(200);
    expect((await from(secret, '2001:db8:1::7')).status).to.equal(200);
    // A dual-stack listener reports an IPv4 client as IPv4-mapped IPv6: it is its IPv4 network.
    expect((await from(secret, '::ffff:10.9.8.7')).status).to.equal(200);

    const refused = await from(secret, '192.0.2.9');
    expect(refused.status).to.equal(403);
    expect(refused.json.error).to.deep.include({ code: 'ip_not_allowed', type: 'permission_error' });
    expect(refused.json.error.message).to.include('192.0.2.9');
    expect((await from(secret, '2001:db9::1')).status).to.equal(403);

    // In the Messages shape on /v1/messages.
    const viaMessages = await messagesFrom(secret, '198.51.100.4');
    expect(viaMessages.status).to.equal(403);
    expect(viaMessages.json).to.deep.include({ type: 'error' });
    expect(viaMessages.json.error.type).to.equal('permission_error');
    expect(viaMessages.json.error.message).to.include('198.51.100.4');
  });

  it('does not trust what the client wrote in X-Forwarded-For: only the entry the trusted proxy appended counts', async () => {
    const { secret } = await owner.createKey({ name: 'forged', allowed_networks: ['10.0.0.0/8'] });
    // The client sent "X-Forwarded-For: 10.0.0.1"; the proxy appended the address it saw.
    const forged = await from(secret, '10.0.0.1, 203.0.113.50');
    expect(forged.status).to.equal(403);
    expect(forged.json.error.message).to.include('203.0.113.50');
    expect((await from(secret, '203.0.113.50, 10.0.0.1')).status).to.equal(200);
  });

  it('refuses before any rate-limit slot or hold: refused requests cost nothing, even at zero balance', async () => {
    const { secret } = await owner.createKey({ name: 'tight', allowed_networks: ['10.0.0.0/8'], rate_limits: { rpm: 1 } });
    const before = upstream.requests.length;
    for (let i = 0; i < 3; i += 1) {
      // A priced model at zero balance: billing would answer 402, rate limiting 429 after the first.
      const refused = await from(secret, '192.0.2.77', 'gpt-priced');
      expect(refused.status).to.equal(403);
      expect(refused.json.error.code).to.equal('ip_not_allowed');
    }
    expect(upstream.requests.length).to.equal(before);
    const account = (await tg.store.findAccountByName('netowner'))!;
    expect((await tg.store.balance(account.id)).held).to.equal(0n);
    // The one request a minute is still there to take.
    expect((await from(secret, '10.0.0.2')).status).to.equal(200);
    expect((await from(secret, '10.0.0.2')).status).to.equal(429);
  });

  it('refuses a list that is not networks, and "any" lifts the owner\'s list', async () => {
    expectError(await owner.post('/api/keys', { name: 'bad', allowed_networks: ['10.0.0.0/33'] }), 400, 'invalid_request', 'allowed_networks');
    expectError(await owner.post('/api/keys', { name: 'bad', allowed_networks: 'office' }), 400, 'invalid_request', 'allowed_networks');
    const { id, secret } = await owner.createKey({ name: 'lifted', allowed_networks: ['10.0.0.0/8'] });
    expect((await from(secret, '192.0.2.1')).status).to.equal(403);
    const lifted = await owner.patch(`/api/keys/${id}`, { allowed_networks: null });
    expect(lifted.status, lifted.text).to.equal(200);
    expect((await from(secret, '192.0.2.1')).status).to.equal(200);
  });

  it("an owner's PATCH cannot clear or loosen an operator's limits (a looser value is refused), only tighten them", async () => {
    const account = await addAccount(tg.store, 'operated');
    const { record, key: operated } = await createKeyCommand(
      tg.store,
      { account: 'operated', name: 'set-by-operator', models: 'gpt-free,gpt-priced', spendLimit: '1', rateLimits: { rpm: '2' }, allowedNetworks: '10.0.0.0/8' },
      () => undefined,
    );
    const client = await ApiClient.login(tg.url, 'operated', PASSWORD);
    const cleared = await client.patch(`/api/keys/${record.id}`, { models: null, spend_limit: null, rate_limits: null, allowed_networks: null });
    expect(cleared.status, cleared.text).to.equal(200);
    expect(cleared.body.key).to.deep.include({ models: ['gpt-free', 'gpt-priced'], spend_limit: '1', rate_limits: { rpm: 2 }, allowed_networks: null });
    expect(cleared.body.key.operator_limits).to.deep.equal({ spend_limit: '1', models: ['gpt-free', 'gpt-priced'], rate_limits: { rpm: 2 }, allowed_networks: ['10.0.0.0/8'], budget: null, session_budget: null });
    const stored = (await tg.store.listKeys({ accountId: account.id }))[0];
    expect(stored).to.deep.include({ models: ['gpt-free', 'gpt-priced'], spendLimit: 1_000_000_000n, rateLimits: { rpm: 2 } });

    const loosened = await client.patch(`/api/keys/${record.id}`, { spend_limit: '50', rate_limits: { rpm: 100 }, models: ['gpt-free', 'claude-priced'] });
    expectError(loosened, 400, 'invalid_request', 'spend_limit');
    expect(loosened.body.error.message).to.contain("capped at the operator's 1: 50 would be looser");
    expect((await tg.store.listKeys({ accountId: account.id }))[0]).to.deep.include({ models: ['gpt-free', 'gpt-priced'], spendLimit: 1_000_000_000n, rateLimits: { rpm: 2 } });

    const tightened = await client.patch(`/api/keys/${record.id}`, { spend_limit: '0.5', rate_limits: { rpm: 1 } });
    expect(tightened.body.key).to.deep.include({ spend_limit: '0.5', rate_limits: { rpm: 1 } });

    // The operator's networks still apply after the owner cleared their own.
    expect((await from(operated, '192.0.2.3')).status).to.equal(403);
    expect((await from(operated, '10.0.0.3')).status).to.equal(200);

    // The operator loosens: the owner's own tighter choice stays.
    await setKeyLimitsCommand(tg.store, { id: record.id, rateLimits: { rpm: '10' }, spendLimit: 'none' }, () => undefined);
    const after = (await tg.store.listKeys({ accountId: account.id })).find((key) => key.id === record.id)!;
    expect(after).to.deep.include({ spendLimit: 500_000_000n, rateLimits: { rpm: 1 } });
    expect(after.operatorLimits).to.deep.equal({ models: ['gpt-free', 'gpt-priced'], rateLimits: { rpm: 10 }, allowedNetworks: ['10.0.0.0/8'] });
  });
});
