/**
 * Transfers end to end, through the management API: on one instance over SQLite, and on two instances
 * sharing PostgreSQL and Redis (skipped, saying so, without them). Who may move credit (the person
 * for their own account; an organisation's owner and billing members), and a race of paid requests
 * and transfers out of one organisation on every instance that never takes its balance below zero
 * and leaves the ledger exact. The balance-book level of the same race is test/billing/transfer-books.test.ts.
 */
import { expect } from 'chai';
import { issueApiKey } from '../../src/auth/issue-key';
import { hashSecret, newInvitationSecret } from '../../src/admin/secrets';
import type { MemberRole } from '../../src/store/orgs';
import type { Account, Store } from '../../src/store/store';
import { ApiClient, expectError } from '../admin/api-client';
import { addAccount, consoleYaml, PASSWORD, passwordHash } from '../admin/fixtures';
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream';
import { REDIS_URL } from '../helpers/services';
import { startSharedInstances, type SharedInstances } from '../helpers/shared-instances';
import { startTestGateway, type TestGateway } from '../helpers/test-gateway';

const UNIT = 1_000_000_000n;

interface Rig {
  readonly urls: readonly string[];
  readonly store: Store;
  close(): Promise<void>;
}

function sharedYaml(upstreamUrl: string, storeUrl: string, redisPrefix: string): string {
  return consoleYaml(upstreamUrl).replace('store: { url: "sqlite::memory:" }', `store: { url: "${storeUrl}" }\nredis: { url: "${REDIS_URL}", key_prefix: "${redisPrefix}" }`);
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

function transferSuite(title: string, open: () => Promise<Rig | string>): void {
  describe(title, function () {
    this.timeout(60_000);
    let rig: Rig;
    let store: Store;

    before(async function () {
      await passwordHash();
      const opened = await open();
      if (typeof opened === 'string') {
        console.log(`      ${opened}: skipped`);
        this.skip();
      }
      rig = opened;
      store = rig.store;
    });

    after(async () => rig?.close());

    /** An organisation owned by `prefix-owner`, with one member per other role, each signed in on `url`. */
    async function team(prefix: string, url: string): Promise<{ org: Account; people: Record<MemberRole, { account: Account; api: ApiClient }> }> {
      const roles: MemberRole[] = ['owner', 'admin', 'billing', 'member'];
      const accounts = await Promise.all(roles.map((role) => addAccount(store, `${prefix}-${role}`)));
      const org = await store.orgs.createOrganisation({ name: `${prefix}-org`, ownerId: accounts[0].id });
      for (const [index, role] of roles.entries()) {
        if (role === 'owner') continue;
        const invitation = await store.orgs.createInvitation({ organisationId: org.id, hash: hashSecret(newInvitationSecret()), invitee: accounts[index].name, role, createdBy: accounts[0].id, expiresAt: new Date(Date.now() + 60_000) });
        expect((await store.orgs.acceptInvitation(invitation.id, accounts[index].id, new Date())).ok).to.equal(true);
      }
      const people = {} as Record<MemberRole, { account: Account; api: ApiClient }>;
      for (const [index, role] of roles.entries()) people[role] = { account: accounts[index], api: await ApiClient.login(url, accounts[index].name, PASSWORD) };
      return { org, people };
    }

    it('moves credit for the person and the money roles only, refuses what is not there, and audits it', async () => {
      const { org, people } = await team('who', rig.urls[0]);
      const owner = people.owner;
      await store.credit({ accountId: owner.account.id, amount: 10n * UNIT, kind: 'admin', actor: 'test', note: null });
      const moved = await owner.api.post('/api/transfers', { from_account_id: owner.account.id, to_account_id: org.id, amount: '4.000000001', note: 'seed the wallet' });
      expect(moved.status, moved.text).to.equal(201);
      expect(moved.body.transfer).to.deep.include({ from_account_id: owner.account.id, from_account_name: owner.account.name, to_account_id: org.id, amount: '4.000000001', actor: owner.account.name, note: 'seed the wallet' });
      expect(moved.body.transfer.id).to.match(/^tr_[0-9a-f]{16}$/);
      // The other instance sees both live balances moved.
      const other = await ApiClient.login(rig.urls[rig.urls.length - 1], owner.account.name, PASSWORD);
      expect((await other.get('/api/account')).body.balance).to.equal('5.999999999');
      expect((await other.get(`/api/orgs/${org.id}`)).body.organisation.balance).to.equal('4.000000001');

      // billing moves money out to themself; admin and member may not, and see 404.
      const billing = await people.billing.api.post('/api/transfers', { from_account_id: org.id, to_account_id: people.billing.account.id, amount: '1' });
      expect(billing.status, billing.text).to.equal(201);
      for (const role of ['admin', 'member'] as const) {
        expectError(await people[role].api.post('/api/transfers', { from_account_id: org.id, to_account_id: people[role].account.id, amount: '1' }), 404, 'not_found');
        expectError(await people[role].api.get(`/api/transfers?account_id=${org.id}`), 404, 'not_found');
      }
      // Nobody moves another person's money, even into an organisation they run.
      expectError(await owner.api.post('/api/transfers', { from_account_id: people.member.account.id, to_account_id: org.id, amount: '1' }), 404, 'not_found');
      expectError(await owner.api.post('/api/transfers', { from_account_id: org.id, to_account_id: org.id, amount: '1' }), 400, 'invalid_request', 'to_account_id');
      expectError(await owner.api.post('/api/transfers', { from_account_id: org.id, to_account_id: owner.account.id, amount: '0' }), 400, 'invalid_request', 'amount');
      const tooMuch = await owner.api.post('/api/transfers', { from_account_id: org.id, to_account_id: owner.account.id, amount: '3.000000002' });
      expectError(tooMuch, 409, 'conflict', 'amount');
      expect(tooMuch.body.error.message).to.include('3.000000001 available');

      const listed = await owner.api.get(`/api/transfers?account_id=${org.id}`);
      expect(listed.body.transfers.map((transfer: { amount: string }) => transfer.amount)).to.deep.equal(['1', '4.000000001']);
      expect((await owner.api.get('/api/transfers')).body.transfers).to.have.length(1);
      const audit = await store.listAudit({ action: 'account.transfer', target: org.id });
      expect(audit.map((entry) => [entry.actor, entry.accountId, entry.target])).to.deep.equal([
        [people.billing.account.name, org.id, people.billing.account.id],
        [owner.account.name, owner.account.id, org.id],
      ]);
    });

    it('never takes the organisation below zero when paid requests and transfers race on every instance; the ledger is exact', async () => {
      const { org, people } = await team('race', rig.urls[0]);
      const start = 20_000_000n;
      await store.credit({ accountId: org.id, amount: start, kind: 'admin', actor: 'test', note: null });
      const { key } = await issueApiKey(store, { accountId: org.id, memberAccountId: people.member.account.id, name: null });
      const billingOn = await Promise.all(rig.urls.map((url) => ApiClient.login(url, people.billing.account.name, PASSWORD)));
      const racing = Array.from({ length: 48 }, async (_, i) => {
        const url = rig.urls[i % rig.urls.length];
        if (i % 3 === 0) {
          const answer = await billingOn[i % billingOn.length].post('/api/transfers', { from_account_id: org.id, to_account_id: people.billing.account.id, amount: '0.002' });
          return { kind: 'transfer', status: answer.status };
        }
        const res = await fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'gpt-priced', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }),
        });
        await res.arrayBuffer();
        return { kind: 'request', status: res.status };
      });
      const results = await Promise.all(racing);
      const transfers = results.filter((result) => result.kind === 'transfer');
      const requests = results.filter((result) => result.kind === 'request');
      expect(transfers.every((result) => result.status === 201 || result.status === 409), JSON.stringify(transfers)).to.equal(true);
      expect(requests.every((result) => result.status === 200 || result.status === 402), JSON.stringify(requests)).to.equal(true);
      const moved = BigInt(transfers.filter((result) => result.status === 201).length) * 2_000_000n;
      const served = requests.filter((result) => result.status === 200).length;
      console.log(`      ${transfers.filter((result) => result.status === 201).length}/${transfers.length} transfers and ${served}/${requests.length} requests admitted`);
      expect(moved > 0n && served > 0).to.equal(true);
      const charges = await until(() => store.listCharges({ accountId: org.id, limit: 1000 }), (list) => list.filter((charge) => charge.status === 200).length === served, 10_000, 'every charge written');
      const spent = charges.reduce((sum, charge) => sum + charge.cost, 0n);
      const totals = await until(() => store.ledgerTotals(), (rows) => rows.find((row) => row.accountId === org.id)?.held === 0n, 10_000, 'holds released');
      const row = totals.find((entry) => entry.accountId === org.id)!;
      expect(row.balance).to.equal(start - spent - moved);
      expect(row.balance >= 0n, `balance ${row.balance}`).to.equal(true);
      expect(row.credits - row.charges - row.debits).to.equal(row.balance);
      expect(row.debits).to.equal(moved);
      const billing = totals.find((entry) => entry.accountId === people.billing.account.id)!;
      expect(billing.balance).to.equal(moved);
      for (const url of rig.urls) {
        const api = await ApiClient.login(url, people.owner.account.name, PASSWORD);
        const live = await until(() => api.get(`/api/orgs/${org.id}`), (answer) => answer.body.organisation?.balance !== undefined, 5_000, 'the live balance');
        expect(live.body.organisation.balance).to.not.match(/^-/);
      }
    });
  });
}

transferSuite('e2e: transfers on one instance (SQLite)', async () => {
  const fake: FakeUpstream = await startFakeUpstream();
  const tg: TestGateway = await startTestGateway({ yaml: consoleYaml(fake.url) });
  return {
    urls: [tg.url],
    store: tg.store,
    async close() {
      await tg.stop();
      await fake.close();
    },
  };
});

transferSuite('e2e: transfers on two instances sharing PostgreSQL and Redis', async () => {
  const started: SharedInstances | { problem: string } = await startSharedInstances('transfers', sharedYaml);
  if ('problem' in started) return started.problem;
  return { urls: started.gateways.map((gateway) => gateway.url), store: started.store, close: () => started.close() };
});
