/**
 * Organisations on two instances sharing PostgreSQL and Redis: two members spend one wallet at once
 * and the ledger is exact; an operator's limit on the organisation binds a key made after it; the
 * operator's rate limit on it and its limit for a member are each one bucket across both instances; a
 * removed member's key is refused by the other instance within a second. Skipped, saying so,
 * without the services.
 */
import { expect } from 'chai';
import { issueApiKey } from '../../src/auth/issue-key';
import { hashSecret, newInvitationSecret } from '../../src/admin/secrets';
import type { Gateway } from '../../src/gateway';
import type { Account, Store } from '../../src/store/store';
import { REDIS_URL } from '../helpers/services';
import { startSharedInstances, type SharedInstances } from '../helpers/shared-instances';
import { PROVIDER_KEYS } from '../helpers/test-gateway';

const BODY = (model: string) => JSON.stringify({ model, max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] });

function sharedYaml(upstreamUrl: string, storeUrl: string, redisPrefix: string): string {
  return `
version: 1
server: { host: 127.0.0.1 }
store: { url: "${storeUrl}" }
redis: { url: "${REDIS_URL}", key_prefix: "${redisPrefix}" }
providers:
  openai: { protocol: openai, base_url: ${upstreamUrl}/v1, api_key: ${PROVIDER_KEYS.openai} }
models:
  gpt-priced: { family: openai, routes: [{ provider: openai }], price: { input: 1, output: 5 }, max_output_tokens: 1000, context_window: 200000 }
  gpt-free: { family: openai, routes: [{ provider: openai }], free: true }
plugins:
  billing: { flush_interval_ms: 10 }
`;
}

async function post(gateway: Gateway, key: string, model = 'gpt-priced'): Promise<{ status: number; json: any }> {
  const res = await fetch(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: BODY(model) });
  return { status: res.status, json: await res.json() };
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, boundMs: number, what: string): Promise<T> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`not within ${boundMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('e2e: organisations on two instances sharing PostgreSQL and Redis', function () {
  this.timeout(60_000);
  let shared: SharedInstances | null = null;
  let gateways: readonly Gateway[] = [];
  let store: Store;

  before(async function () {
    const started = await startSharedInstances('orgs', sharedYaml);
    if ('problem' in started) {
      console.log(`      ${started.problem}: shared organisations suite skipped`);
      this.skip();
    }
    shared = started;
    ({ store, gateways } = shared);
  });

  after(async () => shared?.close());

  async function organisation(name: string, people: readonly string[]): Promise<{ org: Account; members: Account[] }> {
    const members = await Promise.all(people.map((person) => store.createAccount({ name: `${name}-${person}`, role: 'user' })));
    const org = await store.orgs.createOrganisation({ name, ownerId: members[0].id });
    for (const member of members.slice(1)) {
      const invitation = await store.orgs.createInvitation({ organisationId: org.id, hash: hashSecret(newInvitationSecret()), invitee: member.name, role: 'member', createdBy: members[0].id, expiresAt: new Date(Date.now() + 60_000) });
      expect((await store.orgs.acceptInvitation(invitation.id, member.id, new Date())).ok).to.equal(true);
    }
    return { org, members };
  }

  it('two members spend one wallet at once on both instances, and the ledger is exact', async () => {
    const { org, members } = await organisation('wallet', ['alice', 'bob']);
    await store.credit({ accountId: org.id, amount: 10_000_000_000n, kind: 'admin', actor: 'test', note: null });
    const keys = await Promise.all(members.map((member) => issueApiKey(store, { accountId: org.id, memberAccountId: member.id, name: null })));
    const statuses = await Promise.all(Array.from({ length: 24 }, (_, i) => post(gateways[i % 2], keys[i % 2].key).then((answer) => answer.status)));
    expect(statuses.every((status) => status === 200), statuses.join(',')).to.equal(true);
    const charges = await until(() => store.listCharges({ accountId: org.id, limit: 100 }), (list) => list.length === 24, 10_000, '24 charges written');
    for (const member of members) expect(charges.filter((charge) => charge.memberAccountId === member.id), member.name).to.have.length(12);
    const spent = charges.reduce((sum, charge) => sum + charge.cost, 0n);
    const totals = await until(() => store.ledgerTotals(), (rows) => rows.find((row) => row.accountId === org.id)?.held === 0n, 10_000, 'holds released');
    const row = totals.find((entry) => entry.accountId === org.id)!;
    expect(row.charges).to.equal(spent);
    expect(row.balance).to.equal(10_000_000_000n - spent);
    expect(row.credits - row.charges - row.debits).to.equal(row.balance);
    expect(row.openHolds).to.equal(0n);
    expect((await store.balance(org.id)).balance).to.equal(10_000_000_000n - spent);
  });

  it("an operator's limit on the organisation binds a key made after it, and names the level that refused", async () => {
    const { org, members } = await organisation('bound', ['carol']);
    await store.credit({ accountId: org.id, amount: 10_000_000_000n, kind: 'admin', actor: 'test', note: null });
    await store.setAccountOperatorLimits(org.id, { models: ['gpt-free'] });
    const later = await issueApiKey(store, { accountId: org.id, memberAccountId: members[0].id, name: 'made after the limit' });
    for (const gateway of gateways) {
      const refused = await until(() => post(gateway, later.key), (answer) => answer.status !== 200, 5_000, 'the limit applied');
      expect(refused.status).to.equal(403);
      expect(refused.json.error.message).to.include("The operator's limits on this account do not allow the model 'gpt-priced'");
      expect((await post(gateway, later.key, 'gpt-free')).status).to.equal(200);
    }
    // A member's limit set by the organisation binds the same way, and says so.
    await store.setAccountOperatorLimits(org.id, null);
    await store.orgs.setMemberLimits(org.id, members[0].id, { models: ['gpt-free'] });
    const refused = await until(() => post(gateways[1], later.key), (answer) => answer.status === 403, 5_000, "the member's limit applied");
    expect(refused.json.error.message).to.include("The organisation's limits for this member do not allow the model 'gpt-priced'");
  });

  it("holds the operator's limit on the organisation and the organisation's for a member as one bucket across both instances", async () => {
    const { org, members } = await organisation('buckets', ['fay', 'gus']);
    await store.setAccountOperatorLimits(org.id, { rateLimits: { rpm: 10 } });
    await store.orgs.setMemberLimits(org.id, members[1].id, { rateLimits: { rpm: 4 } });
    const keys = await Promise.all([0, 0, 1, 1].map((i) => issueApiKey(store, { accountId: org.id, memberAccountId: members[i].id, name: null }).then((made) => made.key)));
    // Gus's two keys first, at once on both instances: his bucket of 4 holds between them.
    const gus = await Promise.all(Array.from({ length: 12 }, (_, i) => post(gateways[i % 2], keys[2 + (i % 2)], 'gpt-free')));
    expect(gus.filter((answer) => answer.status === 200), "gus's requests admitted").to.have.length(4);
    const gusRefusal = gus.find((answer) => answer.status === 429)!;
    expect(gusRefusal.json.error.message).to.include("The organisation's limit for this member of 4 requests per minute");
    // Then every key at once: the organisation's bucket of 10 has 6 left between all of them.
    const all = await Promise.all(Array.from({ length: 24 }, (_, i) => post(gateways[i % 2], keys[i % 2], 'gpt-free')));
    expect(all.filter((answer) => answer.status === 200), 'requests admitted under the operator limit').to.have.length(6);
    expect(all.find((answer) => answer.status === 429)!.json.error.message).to.include("The operator's limit on this account of 10 requests per minute");
  });

  it("refuses a removed member's key on the other instance within a second", async () => {
    const { org, members } = await organisation('leavers', ['dora', 'ed']);
    const { key } = await issueApiKey(store, { accountId: org.id, memberAccountId: members[1].id, name: null });
    // Both instances know the key (their caches hold it) before the removal.
    for (const gateway of gateways) expect((await post(gateway, key, 'gpt-free')).status).to.equal(200);
    const removedAt = Date.now();
    expect(await store.orgs.removeMember(org.id, members[1].id, new Date())).to.equal('done');
    await until(() => post(gateways[1], key, 'gpt-free'), (answer) => answer.status === 401, 1_000, 'the removed member refused on the other instance');
    const took = Date.now() - removedAt;
    console.log(`      refused on the other instance ${took} ms after the removal`);
    expect((await post(gateways[0], key, 'gpt-free')).status).to.equal(401);
  });
});
