/**
 * A member's budget on two instances sharing PostgreSQL and Redis: the Redis hold script counts what
 * the member spent and holds through any of their keys in the same atomic step as the balance, so
 * twenty concurrent streams from two keys of one member, spread over both instances, against a
 * member budget for three holds admit exactly three while the organisation still has money, and
 * another member keeps spending. A changed budget applies on the other instance from its next
 * request. Skipped, saying so, without the services.
 */
import { expect } from 'chai';
import { issueApiKey } from '../../src/auth/issue-key';
import { hashSecret, newInvitationSecret } from '../../src/admin/secrets';
import type { Gateway } from '../../src/gateway';
import type { Account, Store } from '../../src/store/store';
import type { FakeUpstream } from '../helpers/fake-upstream';
import { REDIS_URL } from '../helpers/services';
import { startSharedInstances, type SharedInstances } from '../helpers/shared-instances';
import { PROVIDER_KEYS } from '../helpers/test-gateway';
import { chatStream } from '../helpers/upstream-replies';

const BODY = JSON.stringify({ model: 'gpt-priced', max_tokens: 1000, stream: true, messages: [{ role: 'user', content: 'Count to three.' }] });
/** What billing holds for BODY: one input token per byte at 1,000 nano-units, 1,000 output tokens at 5,000. */
const HOLD = BigInt(Buffer.byteLength(BODY)) * 1000n + 1000n * 5000n;
const FUNDS = 1_000_000_000n;

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
plugins:
  billing: { flush_interval_ms: 10 }
`;
}

function post(gateway: Gateway, key: string): Promise<Response> {
  return fetch(`${gateway.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: BODY });
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

describe('e2e: member budgets on two instances sharing PostgreSQL and Redis', function () {
  this.timeout(60_000);
  let shared: SharedInstances | null = null;
  let fake: FakeUpstream;
  let gateways: readonly Gateway[] = [];
  let store: Store;

  before(async function () {
    const started = await startSharedInstances('member-budgets', sharedYaml);
    if ('problem' in started) {
      console.log(`      ${started.problem}: shared member budgets suite skipped`);
      this.skip();
    }
    shared = started;
    ({ fake, store, gateways } = shared);
  });

  after(async () => shared?.close());

  async function organisation(name: string): Promise<{ org: Account; owner: Account; member: Account }> {
    const [owner, member] = await Promise.all(['owner', 'member'].map((who) => store.createAccount({ name: `${name}-${who}`, role: 'user' })));
    const org = await store.orgs.createOrganisation({ name, ownerId: owner.id });
    const invitation = await store.orgs.createInvitation({ organisationId: org.id, hash: hashSecret(newInvitationSecret()), invitee: member.name, role: 'member', createdBy: owner.id, expiresAt: new Date(Date.now() + 60_000) });
    expect((await store.orgs.acceptInvitation(invitation.id, member.id, new Date())).ok).to.equal(true);
    await store.credit({ accountId: org.id, amount: FUNDS, kind: 'admin', actor: 'test', note: null });
    return { org, owner, member };
  }

  it("admits exactly 3 of 20 concurrent streams from two keys of one member, across both instances, while the organisation has money", async () => {
    const { org, owner, member } = await organisation('shared-member-budget');
    await store.orgs.setMemberLimits(org.id, member.id, { budget: { amount: 3n * HOLD + HOLD / 2n, period: 'day', timezone: 'Europe/Berlin' } });
    const keys = await Promise.all(['laptop', 'ci'].map((name) => issueApiKey(store, { accountId: org.id, memberAccountId: member.id, name })));
    // The admitted streams stay open until every refusal is back, so no settlement frees budget early.
    let refused = 0;
    let allRefused!: () => void;
    const refusalsBack = new Promise<void>((resolve) => (allRefused = resolve));
    for (let i = 0; i < 3; i++) fake.enqueue({ until: refusalsBack, then: chatStream({ text: 'one two three', includeUsage: true, inputTokens: 20, outputTokens: 10 }) });
    const before = fake.requests.length;
    // Key i % 2 on instance ⌊i / 2⌋ % 2: each key on each instance.
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        post(gateways[Math.floor(i / 2) % 2], keys[i % 2].key).then(async (res) => {
          const text = await res.text();
          if (res.status !== 200 && ++refused === 17) allRefused();
          return { status: res.status, text };
        }),
      ),
    );
    expect(answers.filter((answer) => answer.status === 200), 'admitted').to.have.length(3);
    const refusals = answers.filter((answer) => answer.status === 402);
    expect(refusals, 'refused').to.have.length(17);
    expect(fake.requests.length - before).to.equal(3);
    expect((JSON.parse(refusals[0].text) as { error: { message: string } }).error.message).to.include("The organisation's daily budget for this member of").and.include('(Europe/Berlin)');

    const charges = await until(() => store.listCharges({ accountId: org.id, limit: 100 }), (list) => list.length === 3, 10_000, 'three charges written');
    const spent = charges.reduce((sum, charge) => sum + charge.cost, 0n);
    expect(spent <= 3n * HOLD + HOLD / 2n, `${spent} spent`).to.equal(true);
    const balance = await until(() => store.balance(org.id), (row) => row.held === 0n, 10_000, 'holds released');
    expect(balance.balance).to.equal(FUNDS - spent);
    expect(balance.balance > 10n * HOLD, 'the organisation still has money').to.equal(true);

    // Another member of the organisation spends on, on either instance.
    const other = await issueApiKey(store, { accountId: org.id, memberAccountId: owner.id, name: null });
    for (const gateway of gateways) {
      fake.enqueue(chatStream({ text: 'ok', includeUsage: true, inputTokens: 5, outputTokens: 1 }));
      const answer = await post(gateway, other.key);
      expect(answer.status).to.equal(200);
      await answer.text();
    }
  });

  it('applies a changed member budget on the other instance from its next request', async () => {
    const { org, member } = await organisation('shared-member-change');
    const { key } = await issueApiKey(store, { accountId: org.id, memberAccountId: member.id, name: null });
    await store.orgs.setMemberLimits(org.id, member.id, { budget: { amount: HOLD - 1n, period: 'week', timezone: 'UTC' } });
    for (const gateway of gateways) {
      const refused = await until(async () => { const res = await post(gateway, key); await res.text(); return res.status; }, (status) => status === 402, 5_000, 'the budget applied');
      expect(refused).to.equal(402);
    }
    await store.orgs.setMemberLimits(org.id, member.id, { budget: { amount: 2n * HOLD, period: 'week', timezone: 'UTC' } });
    const changedAt = Date.now();
    fake.enqueue(chatStream({ text: 'one two three', includeUsage: true, inputTokens: 20, outputTokens: 10 }));
    const admitted = await until(async () => { const res = await post(gateways[1], key); await res.text(); return res.status; }, (status) => status === 200, 5_000, 'the raised budget applied');
    expect(admitted).to.equal(200);
    console.log(`      the raised budget applied on the other instance ${Date.now() - changedAt} ms after the change`);
  });
});
