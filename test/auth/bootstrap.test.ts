import { expect } from 'chai';
import { ensureFirstAdmin } from '../../src/auth/bootstrap';
import { hashApiKey } from '../../src/auth/keys';
import type { SqliteStore } from '../../src/store/sqlite';
import { useMemoryStore } from '../helpers/memory-store';

describe('auth/bootstrap', () => {
  const memoryStore = useMemoryStore();
  let store: SqliteStore;
  beforeEach(() => {
    store = memoryStore();
  });

  it('creates the admin account and a first-run key when the store is empty', async () => {
    const result = await ensureFirstAdmin(store);
    expect(result).not.to.equal(null);
    expect(result!.account.name).to.equal('admin');
    expect(result!.account.role).to.equal('admin');
    const identity = await store.findKeyByHash(hashApiKey(result!.key));
    expect(identity?.account.id).to.equal(result!.account.id);
    expect(identity?.key.name).to.equal('first-run');
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
});
