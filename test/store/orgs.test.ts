/**
 * Organisations in both stores: an owner always stays (also when two owners demote each other at
 * once), removing a member revokes their keys in the organisation in the same step, and an
 * invitation is accepted once.
 */
import { expect } from 'chai';
import { Client } from 'pg';
import { generateApiKey } from '../../src/auth/keys';
import { hashSecret, newInvitationSecret } from '../../src/admin/secrets';
import { PostgresStore } from '../../src/store/postgres';
import { SqliteStore } from '../../src/store/sqlite';
import type { Store } from '../../src/store/store';
import { createTestDatabase, postgresProblem, type TestDatabase } from '../helpers/services';

function describeOrgs(name: string, open: () => Promise<Store>): void {
  describe(name, () => {
    let store: Store;
    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => store.close());

    it('makes an organisation with its owner, lists it for them, and keeps one owner always', async () => {
      const alice = await store.createAccount({ name: 'alice', role: 'user' });
      const bob = await store.createAccount({ name: 'bob', role: 'user' });
      const org = await store.orgs.createOrganisation({ name: 'acme', ownerId: alice.id });
      expect(await store.orgs.isOrganisation(org.id)).to.equal(true);
      expect(await store.orgs.isOrganisation(alice.id)).to.equal(false);
      expect((await store.orgs.organisationsOf(alice.id)).map((of) => [of.organisation.name, of.role])).to.deep.equal([['acme', 'owner']]);
      expect((await store.orgs.listOrganisations()).map((o) => o.id)).to.deep.equal([org.id]);
      expect((await store.findLogin('acme'))!.passwordHash, 'nobody signs in to an organisation').to.equal(null);
      expect(await store.orgs.setMemberRole(org.id, alice.id, 'admin')).to.equal('last_owner');
      expect(await store.orgs.removeMember(org.id, alice.id, new Date())).to.equal('last_owner');
      expect(await store.orgs.setMemberRole(org.id, bob.id, 'admin')).to.equal('not_found');
      const invitation = await store.orgs.createInvitation({ organisationId: org.id, hash: hashSecret(newInvitationSecret()), invitee: 'bob', role: 'owner', createdBy: alice.id, expiresAt: new Date(Date.now() + 60_000) });
      expect((await store.orgs.acceptInvitation(invitation.id, bob.id, new Date())).ok).to.equal(true);
      // Two owners demoting each other at once: one of them stays owner.
      const results = await Promise.all([store.orgs.setMemberRole(org.id, alice.id, 'member'), store.orgs.setMemberRole(org.id, bob.id, 'member')]);
      expect([...results].sort()).to.deep.equal(['done', 'last_owner']);
      expect((await store.orgs.listMembers(org.id)).filter((member) => member.role === 'owner')).to.have.length(1);
      await expectRejectsName(store.orgs.createOrganisation({ name: 'ACME', ownerId: bob.id }), 'AccountExistsError');
    });

    it('accepts an invitation once, never after it was revoked or expired', async () => {
      const alice = await store.createAccount({ name: 'alice', role: 'user' });
      const bob = await store.createAccount({ name: 'bob', role: 'user', email: 'bob@example.com' });
      const carol = await store.createAccount({ name: 'carol', role: 'user' });
      const org = await store.orgs.createOrganisation({ name: 'acme', ownerId: alice.id });
      const invite = (invitee: string, expiresAt = new Date(Date.now() + 60_000)) =>
        store.orgs.createInvitation({ organisationId: org.id, hash: hashSecret(newInvitationSecret()), invitee, role: 'member', createdBy: alice.id, expiresAt });
      const secret = newInvitationSecret();
      const forBob = await store.orgs.createInvitation({ organisationId: org.id, hash: hashSecret(secret), invitee: 'bob@example.com', role: 'billing', createdBy: alice.id, expiresAt: new Date(Date.now() + 60_000) });
      expect((await store.orgs.findInvitation(hashSecret(secret)))!.id).to.equal(forBob.id);
      const both = await Promise.all([store.orgs.acceptInvitation(forBob.id, bob.id, new Date()), store.orgs.acceptInvitation(forBob.id, bob.id, new Date())]);
      expect(both.filter((result) => result.ok)).to.have.length(1);
      expect((await store.orgs.findMember(org.id, bob.id))!.role).to.equal('billing');
      const again = await invite('bob');
      expect(await store.orgs.acceptInvitation(again.id, bob.id, new Date())).to.deep.equal({ ok: false, reason: 'member_already' });
      const revoked = await invite('carol');
      expect(await store.orgs.revokeInvitation(org.id, revoked.id, new Date())).to.equal(true);
      expect(await store.orgs.acceptInvitation(revoked.id, carol.id, new Date())).to.deep.equal({ ok: false, reason: 'used' });
      const expired = await invite('carol', new Date(Date.now() + 1000));
      expect(await store.orgs.acceptInvitation(expired.id, carol.id, new Date(Date.now() + 2000))).to.deep.equal({ ok: false, reason: 'used' });
      expect((await store.orgs.listInvitations(org.id)).map((invitation) => invitation.id)).to.include.members([forBob.id, again.id, revoked.id, expired.id]);
    });

    it('removing a member revokes their keys in the organisation and moves the keys revision', async () => {
      const alice = await store.createAccount({ name: 'alice', role: 'user' });
      const bob = await store.createAccount({ name: 'bob', role: 'user' });
      const org = await store.orgs.createOrganisation({ name: 'acme', ownerId: alice.id });
      const invitation = await store.orgs.createInvitation({ organisationId: org.id, hash: hashSecret(newInvitationSecret()), invitee: 'bob', role: 'member', createdBy: alice.id, expiresAt: new Date(Date.now() + 60_000) });
      await store.orgs.acceptInvitation(invitation.id, bob.id, new Date());
      const inOrg = await store.createKey({ accountId: org.id, memberAccountId: bob.id, name: 'work', ...generateApiKey() });
      const own = await store.createKey({ accountId: bob.id, name: 'mine', ...generateApiKey() });
      const alices = await store.createKey({ accountId: org.id, memberAccountId: alice.id, name: 'hers', ...generateApiKey() });
      expect(inOrg.memberAccountId).to.equal(bob.id);
      await store.orgs.setMemberLimits(org.id, bob.id, { budget: { amount: 5_000_000_000n, period: 'day', timezone: 'UTC' }, models: ['gpt-test'] });
      expect((await store.orgs.findMember(org.id, bob.id))!.limits).to.deep.equal({ budget: { amount: 5_000_000_000n, period: 'day', timezone: 'UTC' }, models: ['gpt-test'], rateLimits: null });
      const before = store.keysRevision();
      expect(await store.orgs.removeMember(org.id, bob.id, new Date())).to.equal('done');
      expect(store.keysRevision()).to.not.equal(before);
      const keys = new Map((await store.listKeys()).map((key) => [key.id, key]));
      expect(keys.get(inOrg.id)!.revokedAt, 'his key in the organisation').to.not.equal(null);
      expect(keys.get(own.id)!.revokedAt, 'his own key').to.equal(null);
      expect(keys.get(alices.id)!.revokedAt, "another member's key").to.equal(null);
      expect(await store.orgs.findMember(org.id, bob.id)).to.equal(null);
    });
  });
}

async function expectRejectsName(promise: Promise<unknown>, name: string): Promise<void> {
  try {
    await promise;
  } catch (error) {
    expect((error as Error).name).to.equal(name);
    return;
  }
  expect.fail('it did not reject');
}

describe('store/orgs', function () {
  this.timeout(20_000);
  describeOrgs('SQLite', async () => {
    const store = new SqliteStore(':memory:');
    await store.migrate();
    return store;
  });

  describe('PostgreSQL', function () {
    let database: TestDatabase | null = null;
    before(async function () {
      const problem = await postgresProblem();
      if (problem !== null) {
        console.log(`      ${problem}: the PostgreSQL organisations suite skipped`);
        this.skip();
      }
      database = await createTestDatabase();
    });
    after(async () => database?.drop());
    let round = 0;
    describeOrgs('on a shared database', async () => {
      const store = new PostgresStore({ url: database!.url, connect_timeout_ms: 2_000, statement_timeout_ms: 5_000, pool_size: 5 });
      await store.migrate();
      // Each test starts on empty tables.
      round += 1;
      if (round > 1) {
        const client = new Client({ connectionString: database!.url });
        await client.connect();
        await client.query('TRUNCATE invitations, memberships, api_keys, audit, accounts CASCADE');
        await client.end();
      }
      return store;
    });
  });
});
