/**
 * Rate limits at every level, end to end on one instance over SQLite (issue 44): the operator's limit
 * on an account is one bucket all its keys share (a key made after the limit included), the
 * organisation's limit for a member one bucket for all that member's keys, and the key's own stays
 * the key's. The 429 names the level in each protocol's shape, with retry-after and the headers, and
 * the refusal is recorded with it.
 */
import { expect } from 'chai';
import { hashSecret, newInvitationSecret } from '../../src/admin/secrets';
import { issueApiKey } from '../../src/auth/issue-key';
import type { RefusalRecord } from '../../src/store/refusals';
import type { Account, Store } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { defaultTestYaml, startTestGateway, type TestGateway } from '../helpers/test-gateway';

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly json: any;
}

async function chat(url: string, key: string): Promise<Answer> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.status, headers: res.headers, json: await res.json() };
}

async function messages(url: string, key: string): Promise<Answer> {
  const res = await fetch(`${url}/v1/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'claude-sonnet-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: res.status, headers: res.headers, json: await res.json() };
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string, boundMs = 5000): Promise<T> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`not within ${boundMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function newKey(store: Store, accountId: string, memberAccountId?: string): Promise<string> {
  return (await issueApiKey(store, { accountId, name: null, ...(memberAccountId === undefined ? {} : { memberAccountId }) })).key;
}

/** An organisation owned by its first person, the others its members. */
async function organisation(store: Store, name: string, people: readonly string[]): Promise<{ org: Account; members: Account[] }> {
  const members = await Promise.all(people.map((person) => store.createAccount({ name: `${name}-${person}`, role: 'user' })));
  const org = await store.orgs.createOrganisation({ name, ownerId: members[0].id });
  for (const member of members.slice(1)) {
    const invitation = await store.orgs.createInvitation({ organisationId: org.id, hash: hashSecret(newInvitationSecret()), invitee: member.name, role: 'member', createdBy: members[0].id, expiresAt: new Date(Date.now() + 60_000) });
    expect((await store.orgs.acceptInvitation(invitation.id, member.id, new Date())).ok).to.equal(true);
  }
  return { org, members };
}

describe('e2e: rate limits at every level (SQLite)', function () {
  this.timeout(30_000);
  let fake: FakeUpstream;
  let tg: TestGateway;

  before(async () => {
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: defaultTestYaml(fake.url) });
  });
  after(async () => {
    await tg?.stop();
    await fake?.close();
  });

  it("shares the operator's rpm limit on an account between its keys, one made after the limit included", async () => {
    const account = await tg.store.createAccount({ name: 'shared-rpm', role: 'user' });
    const [first, second] = [await newKey(tg.store, account.id), await newKey(tg.store, account.id)];
    expect(await tg.store.setAccountOperatorLimits(account.id, { rateLimits: { rpm: 4 } })).to.equal(true);
    const later = await newKey(tg.store, account.id);
    const statuses: number[] = [];
    for (const key of [first, second, later, first]) statuses.push((await chat(tg.url, key)).status);
    expect(statuses, 'four requests of three keys fill the one bucket of 4').to.deep.equal([200, 200, 200, 200]);
    for (const key of [first, second, later]) {
      const refused = await chat(tg.url, key);
      expect(refused.status).to.equal(429);
      expect(refused.json.error).to.deep.include({ type: 'requests', code: 'rate_limit_exceeded' });
      expect(refused.json.error.message).to.match(/^The operator's limit on this account of 4 requests per minute is reached\. Retry in \d+ s\.$/);
      expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 60);
      expect(refused.headers.get('x-ratelimit-limit-requests')).to.equal('4');
      expect(refused.headers.get('x-ratelimit-remaining-requests')).to.equal('0');
    }
    // The Anthropic endpoint answers in its shape, from the same bucket.
    const anthropic = await messages(tg.url, second);
    expect(anthropic.status).to.equal(429);
    expect(anthropic.json.error.type).to.equal('rate_limit_error');
    expect(anthropic.json.error.message).to.include("The operator's limit on this account of 4 requests per minute");
    expect(anthropic.headers.get('anthropic-ratelimit-requests-limit')).to.equal('4');
    // Another account is untouched by it.
    expect((await chat(tg.url, tg.key)).status).to.equal(200);
    const recorded = await until(() => tg.store.refusals.list({ accountId: account.id, limit: 10 }), (rows) => rows.length === 4, 'the four refusals recorded');
    expect(recorded.map((row) => [row.status, row.code, row.level, row.memberAccountId])).to.deep.equal(Array(4).fill([429, 'TOLLGATE_ERR_RATE_LIMIT_REQUESTS', 'account', null]));
  });

  it("shares the organisation's limit for a member between that member's keys, not with other members", async () => {
    const { org, members } = await organisation(tg.store, 'levels', ['olga', 'pat', 'quinn']);
    const [, pat, quinn] = members;
    expect(await tg.store.orgs.setMemberLimits(org.id, pat.id, { rateLimits: { rpm: 3 } })).to.equal(true);
    const patKeys = [await newKey(tg.store, org.id, pat.id), await newKey(tg.store, org.id, pat.id)];
    const quinnKey = await newKey(tg.store, org.id, quinn.id);
    const statuses: number[] = [];
    for (const key of [patKeys[0], patKeys[1], patKeys[0]]) statuses.push((await chat(tg.url, key)).status);
    expect(statuses).to.deep.equal([200, 200, 200]);
    const refused = await chat(tg.url, patKeys[1]);
    expect(refused.status).to.equal(429);
    expect(refused.json.error.message).to.match(/^The organisation's limit for this member of 3 requests per minute is reached\. Retry in \d+ s\.$/);
    expect((await chat(tg.url, quinnKey)).status, "another member's key has its own bucket").to.equal(200);

    // The operator's limit on the organisation binds every member's keys together, above the member's.
    expect(await tg.store.setAccountOperatorLimits(org.id, { rateLimits: { rpm: 5 } })).to.equal(true);
    const quinnLater = await newKey(tg.store, org.id, quinn.id);
    // The organisation's bucket opens with the limit: 5 more requests between every member's keys.
    const more: number[] = [];
    for (const key of [quinnKey, quinnLater, quinnKey, quinnLater, quinnKey, quinnLater]) more.push((await chat(tg.url, key)).status);
    expect(more).to.deep.equal([200, 200, 200, 200, 200, 429]);
    const byOperator = await chat(tg.url, quinnKey);
    expect(byOperator.json.error.message).to.include("The operator's limit on this account of 5 requests per minute");
    const recorded: RefusalRecord[] = await until(() => tg.store.refusals.list({ accountId: org.id, limit: 10 }), (rows) => rows.length === 3, 'the refusals recorded');
    expect(recorded.map((row) => [row.level, row.memberAccountId])).to.deep.equal([['account', quinn.id], ['account', quinn.id], ['member', pat.id]]);
    const pats = await tg.store.refusals.list({ accountId: org.id, memberAccountId: pat.id, limit: 10 });
    expect(pats.map((row) => row.code)).to.deep.equal(['TOLLGATE_ERR_RATE_LIMIT_REQUESTS']);
  });

  it("keeps the key's own limit per key, under the account's shared one", async () => {
    const account = await tg.store.createAccount({ name: 'own-and-shared', role: 'user' });
    await tg.store.setAccountOperatorLimits(account.id, { rateLimits: { rpm: 10 } });
    const limited = (await issueApiKey(tg.store, { accountId: account.id, name: 'own limit', rateLimits: { rpm: 1 } })).key;
    const other = await newKey(tg.store, account.id);
    expect((await chat(tg.url, limited)).status).to.equal(200);
    const refused = await chat(tg.url, limited);
    expect(refused.status).to.equal(429);
    expect(refused.json.error.message).to.match(/^This API key's limit of 1 requests per minute is reached/);
    expect((await chat(tg.url, other)).status, "the key's own limit is its alone").to.equal(200);
    // The headers show the level with less left: the account has 8 left, the limited key none.
    expect(refused.headers.get('x-ratelimit-remaining-requests')).to.equal('0');
    expect((await chat(tg.url, other)).headers.get('x-ratelimit-remaining-requests')).to.equal('7');
  });
});
