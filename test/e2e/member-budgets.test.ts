/**
 * A member's budget end to end on one instance (SQLite, the in-process book): set by the
 * organisation's owner through the management API, it binds every key the member has in the
 * organisation. Two keys of one member streaming at once stop at the member's bound while the
 * organisation still has money, the refusal names the level and its reset in each protocol's shape,
 * another member keeps spending, and a changed budget applies from the next request.
 */
import { expect } from 'chai';
import { issueApiKey } from '../../src/auth/issue-key';
import { hashSecret, newInvitationSecret } from '../../src/admin/secrets';
import { periodAt } from '../../src/billing/budget-period';
import type { Account } from '../../src/store/store';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';
import { chatStream } from '../helpers/upstream-replies';
import { ApiClient } from '../admin/api-client';
import { addAccount, consoleYaml, PASSWORD, passwordHash } from '../admin/fixtures';

const BODY = JSON.stringify({ model: 'gpt-priced', max_tokens: 1000, stream: true, messages: [{ role: 'user', content: 'Count to three.' }] });
/** What billing holds for BODY: one input token per byte at the dearest input price (cache writes, 1,250 nano-units), 1,000 output tokens at 5,000. */
const HOLD = BigInt(Buffer.byteLength(BODY)) * 1250n + 1000n * 5000n;
const FUNDS = 1_000_000_000n;
const units = (nano: bigint): string => (Number(nano) / 1e9).toFixed(9);

function post(url: string, key: string, body = BODY): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
}

describe('e2e: member budgets on one instance', function () {
  this.timeout(30_000);
  let fake: FakeUpstream;
  let tg: TestGateway;

  before(async () => {
    await passwordHash();
    fake = await startFakeUpstream();
    tg = await startTestGateway({ yaml: consoleYaml(fake.url) });
  });

  after(async () => {
    await tg?.stop();
    await fake?.close();
  });

  /** An organisation with money, its owner signed in, and a second member. */
  async function organisation(name: string): Promise<{ org: Account; owner: ApiClient; ownerId: string; member: Account }> {
    const first = await addAccount(tg.store, `${name}-owner`);
    const member = await addAccount(tg.store, `${name}-member`);
    const org = await tg.store.orgs.createOrganisation({ name, ownerId: first.id });
    const invitation = await tg.store.orgs.createInvitation({ organisationId: org.id, hash: hashSecret(newInvitationSecret()), invitee: member.name, role: 'member', createdBy: first.id, expiresAt: new Date(Date.now() + 60_000) });
    expect((await tg.store.orgs.acceptInvitation(invitation.id, member.id, new Date())).ok).to.equal(true);
    await tg.store.credit({ accountId: org.id, amount: FUNDS, kind: 'admin', actor: 'test', note: null });
    return { org, owner: await ApiClient.login(tg.url, first.name, PASSWORD), ownerId: first.id, member };
  }

  it("stops two keys of one member at the member's bound while the organisation has money; another member spends on", async () => {
    const { org, owner, member } = await organisation('mb-acme');
    const set = await owner.patch(`/api/orgs/${org.id}/members/${member.id}`, { budget: { amount: units(3n * HOLD + HOLD / 2n), period: 'day', timezone: 'UTC' } });
    expect(set.status, set.text).to.equal(200);
    const keys = [await issueApiKey(tg.store, { accountId: org.id, memberAccountId: member.id, name: 'laptop' }), await issueApiKey(tg.store, { accountId: org.id, memberAccountId: member.id, name: 'ci' })];
    // The admitted streams stay open until the 17 refusals are back, so no settlement frees budget early.
    let refused = 0;
    let allRefused!: () => void;
    const refusalsBack = new Promise<void>((resolve) => (allRefused = resolve));
    for (let i = 0; i < 3; i++) fake.enqueue({ until: refusalsBack, then: chatStream({ text: 'one two three', includeUsage: true, inputTokens: 20, outputTokens: 10 }) });
    const before = fake.requests.length;
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        post(tg.url, keys[i % 2].key).then(async (res) => {
          const text = await res.text();
          if (res.status !== 200 && ++refused === 17) allRefused();
          return { status: res.status, text, reset: res.headers.get('x-tollgate-budget-reset') };
        }),
      ),
    );
    expect(answers.filter((answer) => answer.status === 200), 'admitted').to.have.length(3);
    const refusals = answers.filter((answer) => answer.status === 402);
    expect(refusals, 'refused').to.have.length(17);
    expect(fake.requests.length - before).to.equal(3);
    const reset = periodAt(new Date(), 'day', 'UTC').end.toISOString().replace('.000Z', 'Z');
    const { error } = JSON.parse(refusals[0].text) as { error: { code: string; message: string } };
    expect(error.code).to.equal('budget_exceeded');
    expect(error.message).to.include("The organisation's daily budget for this member of").and.include('(UTC)').and.include(`resets at ${reset}`);
    expect(refusals[0].reset).to.equal(reset);

    // The organisation still has money: the member's bound refused, not the balance.
    const charges = await waitFor(() => tg.store.listCharges({ accountId: org.id, limit: 100 }), (list) => list.length === 3);
    const spent = charges.reduce((sum, charge) => sum + charge.cost, 0n);
    expect(charges.every((charge) => charge.memberAccountId === member.id)).to.equal(true);
    expect(spent <= 3n * HOLD + HOLD / 2n, `${spent} spent`).to.equal(true);
    expect((await tg.store.balance(org.id)).balance).to.equal(FUNDS - spent);
    expect(FUNDS - spent > 10n * HOLD).to.equal(true);

    // The owner, another member of the same organisation, spends on.
    const ownKey = await issueApiKey(tg.store, { accountId: org.id, memberAccountId: (await tg.store.orgs.listMembers(org.id)).find((m) => m.role === 'owner')!.accountId, name: null });
    fake.enqueue(chatStream({ text: 'ok', includeUsage: true, inputTokens: 5, outputTokens: 1 }));
    const other = await post(tg.url, ownKey.key);
    expect(other.status).to.equal(200);
    await other.text();

    // Anthropic's shape says the same.
    const messages = await fetch(`${tg.url}/v1/messages`, {
      method: 'POST',
      headers: { 'x-api-key': keys[0].key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-priced', max_tokens: 2000, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(messages.status).to.equal(402);
    const body = (await messages.json()) as { type: string; error: { type: string; message: string } };
    expect(body.type).to.equal('error');
    expect(body.error.type).to.equal('billing_error');
    expect(body.error.message).to.include("The organisation's daily budget for this member");
  });

  it("applies a changed member budget from the next request on, and shows the member's spend in its period", async () => {
    const { org, owner, member } = await organisation('mb-change');
    const { key } = await issueApiKey(tg.store, { accountId: org.id, memberAccountId: member.id, name: null });
    await owner.patch(`/api/orgs/${org.id}/members/${member.id}`, { budget: { amount: units(HOLD - 1n), period: 'week', timezone: 'UTC' } });
    const refused = await post(tg.url, key);
    expect(refused.status).to.equal(402);
    await refused.text();
    await owner.patch(`/api/orgs/${org.id}/members/${member.id}`, { budget: { amount: units(2n * HOLD), period: 'week', timezone: 'UTC' } });
    fake.enqueue(chatStream({ text: 'one two three', includeUsage: true, inputTokens: 20, outputTokens: 10 }));
    const admitted = await post(tg.url, key);
    expect(admitted.status).to.equal(200);
    await admitted.text();
    await waitFor(() => tg.store.listCharges({ accountId: org.id, limit: 10 }), (list) => list.length === 1);
    const members = await owner.get(`/api/orgs/${org.id}/members`);
    const view = (members.body.members as { account_id: string; budget_spent: { spent: string; resets_at: string } | null }[]).find((entry) => entry.account_id === member.id)!;
    expect(view.budget_spent?.spent).to.equal('0.00007');
    expect(view.budget_spent?.resets_at).to.equal(periodAt(new Date(), 'week', 'UTC').end.toISOString());
    // Cleared: no member budget, nothing to refuse.
    await owner.patch(`/api/orgs/${org.id}/members/${member.id}`, { budget: null });
    fake.enqueue(chatStream({ text: 'ok', includeUsage: true, inputTokens: 5, outputTokens: 1 }));
    const free = await post(tg.url, key);
    expect(free.status).to.equal(200);
    await free.text();
  });
});

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error('not within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
