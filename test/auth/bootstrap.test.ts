import { expect } from 'chai';
import { applyAdminPassword, ensureFirstAdmin } from '../../src/auth/bootstrap';
import { hashApiKey } from '../../src/auth/keys';
import { verifyPassword } from '../../src/auth/passwords';
import type { SqliteStore } from '../../src/store/sqlite';
import { rejection } from '../helpers/async';
import { useMemoryStore } from '../helpers/memory-store';

describe('auth/bootstrap', function () {
  // Console passwords are scrypt hashes (~0.3 s each).
  this.timeout(20_000);
  const memoryStore = useMemoryStore();
  let store: SqliteStore;
  beforeEach(() => {
    store = memoryStore();
  });

  it('creates the admin account, a first-run key and a generated console password when the store is empty', async () => {
    const result = await ensureFirstAdmin(store);
    expect(result).not.to.equal(null);
    expect(result!.account.name).to.equal('admin');
    expect(result!.account.role).to.equal('admin');
    const identity = await store.findKeyByHash(hashApiKey(result!.key));
    expect(identity?.account.id).to.equal(result!.account.id);
    expect(identity?.key.name).to.equal('first-run');
    const login = await store.findLogin('admin');
    expect(result!.generatedPassword).to.be.a('string');
    expect(await verifyPassword(result!.generatedPassword!, login!.passwordHash!)).to.equal(true);
  });

  it("uses the operator's password when given, and reports none generated", async () => {
    const result = await ensureFirstAdmin(store, { password: 'operator-chosen-secret' });
    expect(result!.generatedPassword).to.equal(null);
    const login = await store.findLogin('admin');
    expect(await verifyPassword('operator-chosen-secret', login!.passwordHash!)).to.equal(true);
  });

  it('returns null when an account exists', async () => {
    await store.createAccount({ name: 'someone', role: 'user' });
    expect(await ensureFirstAdmin(store)).to.equal(null);
    expect(await store.countAccounts()).to.equal(1);
  });

  it('returns null on the second run', async () => {
    await ensureFirstAdmin(store);
    expect(await ensureFirstAdmin(store)).to.equal(null);
    expect(await store.listKeys()).to.have.length(1);
  });

  describe('applyAdminPassword (TOLLGATE_ADMIN_PASSWORD on later starts)', () => {
    it('creates an admin account named admin when there is none', async () => {
      await store.createAccount({ name: 'someone', role: 'user' });
      expect(await applyAdminPassword(store, 'from-the-environment')).to.equal('created');
      const login = await store.findLogin('admin');
      expect(login?.account.role).to.equal('admin');
      expect(await verifyPassword('from-the-environment', login!.passwordHash!)).to.equal(true);
    });

    it('changes the password when the variable changed, and leaves it when it did not', async () => {
      await ensureFirstAdmin(store, { password: 'the-first-password' });
      const before = (await store.findLogin('admin'))!.passwordHash;
      expect(await applyAdminPassword(store, 'the-first-password')).to.equal('unchanged');
      expect((await store.findLogin('admin'))!.passwordHash).to.equal(before);
      expect(await applyAdminPassword(store, 'the-second-password')).to.equal('changed');
      const after = (await store.findLogin('admin'))!.passwordHash!;
      expect(await verifyPassword('the-second-password', after)).to.equal(true);
      expect(await verifyPassword('the-first-password', after)).to.equal(false);
    });

    it('refuses a password shorter than 10 characters', async () => {
      const error = await rejection(applyAdminPassword(store, 'short'));
      expect(error.message).to.match(/at least 10 characters/);
      expect(await store.findLogin('admin')).to.equal(null);
    });
  });
});
