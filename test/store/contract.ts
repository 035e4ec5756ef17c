/**
 * The behaviour every `Store` must have, as one mocha suite that each implementation runs against
 * itself (`sqlite-contract.test.ts`, `postgres.test.ts`). Amounts are chosen above 2^53 where it
 * matters, so a value that went through a JS number would come back wrong.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { generateApiKey } from '../../src/auth/keys';
import { AccountExistsError } from '../../src/store/store';
import type { NewAuditEntry } from '../../src/store/audit';
import type { RefusalRecord } from '../../src/store/refusals';
import type { Account, ApiKeyRecord, Hold, NewKey, Store, UsageSummaryRow } from '../../src/store/store';
import { LedgerWriter } from '../../src/billing/ledger-writer';
import { rejection } from '../helpers/async';
import { chargeOf } from '../helpers/charges';
import { captureLogger } from '../helpers/capture-logger';

/** 2^53 + 1: the smallest integer a JS number cannot hold. */
const BEYOND_DOUBLE = 9_007_199_254_740_993n;
const HOUR_MS = 3_600_000;

function newKey(account: Account, extra: Partial<NewKey> = {}): NewKey {
  const { hash, prefix, last4 } = generateApiKey();
  return { accountId: account.id, name: 'test', hash, prefix, last4, ...extra };
}

function holdOf(key: ApiKeyRecord, amount: bigint, extra: Partial<Hold> = {}): Hold {
  return { requestId: `req_${randomUUID()}`, accountId: key.accountId, keyId: key.id, amount, expiresAt: new Date(Date.now() + HOUR_MS), ...extra };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Registers the contract suite. `open` returns a new, migrated, empty store for each test; the suite
 * closes it afterwards and then calls `cleanup` (e.g. to empty a shared database).
 */
export function describeStoreContract(label: string, open: () => Promise<Store>, cleanup?: () => Promise<void>): void {
  describe(`${label}: Store contract`, function () {
    let store: Store;

    beforeEach(async () => {
      store = await open();
    });

    afterEach(async () => {
      await store?.close();
      await cleanup?.();
    });

    /** An account with `funds` credited and one key on it. */
    async function funded(funds: bigint, keyExtra: Partial<NewKey> = {}): Promise<{ account: Account; key: ApiKeyRecord }> {
      const account = await store.createAccount({ name: `acct-${randomUUID()}`, role: 'user' });
      if (funds > 0n) await store.credit({ accountId: account.id, amount: funds, kind: 'topup', actor: 'test', note: null });
      const key = await store.createKey(newKey(account, keyExtra));
      return { account, key };
    }

    async function spentOf(key: ApiKeyRecord): Promise<bigint> {
      const [found] = (await store.listKeys({ accountId: key.accountId })).filter((k) => k.id === key.id);
      return found.spent;
    }

    describe('accounts', () => {
      it('creates an account with an acc_ id and finds it by name and by id', async () => {
        const created = await store.createAccount({ name: 'alice', role: 'admin' });
        expect(created.id).to.match(/^acc_[0-9a-f]{16}$/);
        expect(created).to.include({ name: 'alice', role: 'admin', disabled: false });
        expect(created.createdAt).to.be.instanceOf(Date);
        expect(await store.findAccountByName('alice')).to.deep.equal(created);
        expect(await store.findAccountById(created.id)).to.deep.equal(created);
        expect(await store.findAccountByName('bob')).to.equal(null);
        expect(await store.findAccountById('acc_0000000000000000')).to.equal(null);
      });

      it('rejects a second account with the same name with AccountExistsError', async () => {
        await store.createAccount({ name: 'alice', role: 'user' });
        const error = await rejection(store.createAccount({ name: 'alice', role: 'admin' }));
        expect(error).to.be.instanceOf(AccountExistsError);
        expect((error as AccountExistsError).accountName).to.equal('alice');
        expect(await store.countAccounts()).to.equal(1);
      });

      it('counts accounts', async () => {
        expect(await store.countAccounts()).to.equal(0);
        await store.createAccount({ name: 'a', role: 'user' });
        await store.createAccount({ name: 'b', role: 'user' });
        expect(await store.countAccounts()).to.equal(2);
      });
    });

    describe('keys', () => {
      let alice: Account;
      let bob: Account;

      beforeEach(async () => {
        alice = await store.createAccount({ name: 'alice', role: 'user' });
        bob = await store.createAccount({ name: 'bob', role: 'admin' });
      });

      it('creates a key with a key_ id and lists it in creation order, per account or all', async () => {
        const input = newKey(alice, { name: 'laptop' });
        const a = await store.createKey(input);
        const b = await store.createKey(newKey(bob, { name: null }));
        const c = await store.createKey(newKey(alice, { name: 'ci' }));
        expect(a.id).to.match(/^key_[0-9a-f]{16}$/);
        expect(a).to.include({ accountId: alice.id, name: 'laptop', revokedAt: null, expiresAt: null, spendLimit: null, models: null });
        expect(a.spent).to.equal(0n);
        expect(a.prefix).to.equal(input.prefix);
        expect(a.last4).to.equal(input.last4);
        expect(b.name).to.equal(null);
        expect(await store.listKeys()).to.deep.equal([a, b, c]);
        expect(await store.listKeys({ accountId: alice.id })).to.deep.equal([a, c]);
        expect(await store.listKeys({ accountId: 'acc_0000000000000000' })).to.deep.equal([]);
      });

      it('keeps a spend limit beyond 2^53, a model list and an expiry exactly', async () => {
        const expiresAt = new Date(Date.now() + HOUR_MS);
        const key = await store.createKey(newKey(alice, { spendLimit: BEYOND_DOUBLE, models: ['gpt-4o', 'claude'], expiresAt }));
        expect(key.spendLimit).to.equal(BEYOND_DOUBLE);
        expect(key.models).to.deep.equal(['gpt-4o', 'claude']);
        const [listed] = await store.listKeys({ accountId: alice.id });
        expect(listed).to.deep.equal(key);
        expect(listed.expiresAt!.getTime()).to.equal(expiresAt.getTime());
      });

      it('keeps an empty model list apart from "every model"', async () => {
        const none = await store.createKey(newKey(alice, { models: [] }));
        const [listed] = await store.listKeys({ accountId: alice.id });
        expect(none.models).to.deep.equal([]);
        expect(listed.models).to.deep.equal([]);
      });

      it('refuses a key for an unknown account', async () => {
        const error = await rejection(store.createKey({ ...newKey(alice), accountId: 'acc_0000000000000000' }));
        expect(error.message).to.match(/no account/);
        expect(await store.listKeys()).to.deep.equal([]);
      });

      it('rejects a hash that is not 32 bytes', async () => {
        await rejection(store.createKey({ ...newKey(alice), hash: Buffer.alloc(16) }));
        expect(await store.listKeys()).to.deep.equal([]);
      });

      it('revokes a key, keeps the first revocation time, and reports unknown ids', async () => {
        const key = await store.createKey(newKey(alice));
        expect(await store.revokeKey(key.id)).to.equal(true);
        const [first] = await store.listKeys();
        expect(first.revokedAt).to.be.instanceOf(Date);
        await sleep(5);
        expect(await store.revokeKey(key.id)).to.equal(true);
        const [second] = await store.listKeys();
        expect(second.revokedAt!.getTime()).to.equal(first.revokedAt!.getTime());
        expect(await store.revokeKey('key_doesnotexist00')).to.equal(false);
      });

      it('finds a key by hash together with its account', async () => {
        const input = newKey(bob, { name: 'ci', spendLimit: 5n, models: ['m'] });
        const key = await store.createKey(input);
        const identity = await store.findKeyByHash(input.hash);
        expect(identity).not.to.equal(null);
        expect(identity!.key).to.deep.equal(key);
        expect(identity!.account).to.deep.equal(bob);
        expect(identity!.hash.equals(input.hash)).to.equal(true);
        expect(await store.findKeyByHash(generateApiKey().hash)).to.equal(null);
      });

      it('returns revoked and expired keys with their dates, for auth to decide', async () => {
        const expired = newKey(alice, { expiresAt: new Date(Date.now() - 1000) });
        await store.createKey(expired);
        const revoked = newKey(alice);
        const record = await store.createKey(revoked);
        await store.revokeKey(record.id);
        expect((await store.findKeyByHash(expired.hash))!.key.expiresAt!.getTime()).to.be.below(Date.now());
        expect((await store.findKeyByHash(revoked.hash))!.key.revokedAt).to.be.instanceOf(Date);
      });

      it('sets and clears a key\'s spend limit and models, and reports unknown ids', async () => {
        const input = newKey(alice);
        const key = await store.createKey(input);
        expect(await store.setKeyLimits(key.id, { spendLimit: BEYOND_DOUBLE, models: ['a', 'b'] })).to.equal(true);
        let found = (await store.findKeyByHash(input.hash))!.key;
        expect(found.spendLimit).to.equal(BEYOND_DOUBLE);
        expect(found.models).to.deep.equal(['a', 'b']);
        expect(await store.setKeyLimits(key.id, { spendLimit: null, models: null })).to.equal(true);
        found = (await store.findKeyByHash(input.hash))!.key;
        expect(found.spendLimit).to.equal(null);
        expect(found.models).to.equal(null);
        expect(await store.setKeyLimits('key_doesnotexist00', { spendLimit: 1n, models: null })).to.equal(false);
      });
    });

    describe('keysRevision', () => {
      it('changes after every account and key write', async () => {
        const seen = [store.keysRevision()];
        const account = await store.createAccount({ name: 'alice', role: 'user' });
        seen.push(store.keysRevision());
        const key = await store.createKey(newKey(account));
        seen.push(store.keysRevision());
        await store.setKeyLimits(key.id, { spendLimit: 10n, models: null });
        seen.push(store.keysRevision());
        await store.revokeKey(key.id);
        seen.push(store.keysRevision());
        for (let i = 1; i < seen.length; i += 1) expect(seen[i], `write ${i}`).not.to.equal(seen[i - 1]);
      });

      it('stays the same across ledger writes, so billing does not flush the auth cache', async () => {
        const { key } = await funded(1_000n);
        await sleep(300); // lets the notifications of the writes above arrive, where a store has them
        const before = store.keysRevision();
        const hold = holdOf(key, 100n);
        await store.holdFunds(hold);
        await store.recordCharges([chargeOf(key, hold.requestId, 60n)]);
        await store.credit({ accountId: key.accountId, amount: 5n, kind: 'admin', actor: 'test', note: null });
        await sleep(300);
        expect(store.keysRevision()).to.equal(before);
      });
    });

    describe('holdFunds', () => {
      it('holds up to exactly the available balance, then refuses with reason balance and what is left', async () => {
        const { key } = await funded(1_000n);
        expect(await store.holdFunds(holdOf(key, 600n))).to.deep.equal({ ok: true });
        expect(await store.balance(key.accountId)).to.deep.equal({ balance: 1_000n, held: 600n });
        expect(await store.holdFunds(holdOf(key, 401n))).to.deep.equal({ ok: false, reason: 'balance', available: 400n });
        expect(await store.holdFunds(holdOf(key, 400n))).to.deep.equal({ ok: true });
        expect(await store.holdFunds(holdOf(key, 1n))).to.deep.equal({ ok: false, reason: 'balance', available: 0n });
        expect(await store.balance(key.accountId)).to.deep.equal({ balance: 1_000n, held: 1_000n });
      });

      it('holds amounts beyond 2^53 exactly', async () => {
        const { key } = await funded(BEYOND_DOUBLE);
        expect(await store.holdFunds(holdOf(key, BEYOND_DOUBLE - 1n))).to.deep.equal({ ok: true });
        expect(await store.holdFunds(holdOf(key, 2n))).to.deep.equal({ ok: false, reason: 'balance', available: 1n });
        expect(await store.balance(key.accountId)).to.deep.equal({ balance: BEYOND_DOUBLE, held: BEYOND_DOUBLE - 1n });
      });

      it('refuses over the key\'s spend limit and undoes the account\'s part', async () => {
        const { key } = await funded(1_000n, { spendLimit: 100n });
        const first = holdOf(key, 60n);
        expect(await store.holdFunds(first)).to.deep.equal({ ok: true });
        expect(await store.holdFunds(holdOf(key, 50n))).to.deep.equal({ ok: false, reason: 'key_spend_limit', available: 40n });
        // Neither the account's held amount nor a hold row was left behind.
        expect(await store.balance(key.accountId)).to.deep.equal({ balance: 1_000n, held: 60n });
        expect((await store.expiredHolds(new Date(Date.now() + 2 * HOUR_MS), 10)).map((h) => h.requestId)).to.deep.equal([first.requestId]);
        // Nor the key's: once the first hold is released, the whole limit is available again.
        expect(await store.releaseHolds([first.requestId])).to.equal(1);
        expect(await store.holdFunds(holdOf(key, 100n))).to.deep.equal({ ok: true });
      });

      it('counts what the key has spent against its limit, and never reports a negative headroom', async () => {
        const { key } = await funded(1_000n, { spendLimit: 100n });
        const hold = holdOf(key, 70n);
        await store.holdFunds(hold);
        await store.recordCharges([chargeOf(key, hold.requestId, 70n)]);
        expect(await spentOf(key)).to.equal(70n);
        expect(await store.holdFunds(holdOf(key, 31n))).to.deep.equal({ ok: false, reason: 'key_spend_limit', available: 30n });
        await store.setKeyLimits(key.id, { spendLimit: 50n, models: null });
        expect(await store.holdFunds(holdOf(key, 1n))).to.deep.equal({ ok: false, reason: 'key_spend_limit', available: 0n });
        await store.setKeyLimits(key.id, { spendLimit: null, models: null });
        expect(await store.holdFunds(holdOf(key, 900n))).to.deep.equal({ ok: true });
      });

      it('refuses an unknown account with nothing available', async () => {
        const { key } = await funded(100n);
        expect(await store.holdFunds(holdOf(key, 1n, { accountId: 'acc_0000000000000000' }))).to.deep.equal({
          ok: false,
          reason: 'balance',
          available: 0n,
        });
      });

      it('rejects a second hold for the same request id and leaves the first as it was', async () => {
        const { key } = await funded(1_000n);
        const hold = holdOf(key, 100n);
        await store.holdFunds(hold);
        await rejection(store.holdFunds({ ...hold, amount: 200n }));
        expect(await store.balance(key.accountId)).to.deep.equal({ balance: 1_000n, held: 100n });
      });

      it('admits exactly 3 of 50 concurrent holds when the balance covers exactly 3', async () => {
        const { key } = await funded(300n);
        const results = await Promise.all(Array.from({ length: 50 }, () => store.holdFunds(holdOf(key, 100n))));
        expect(results.filter((r) => r.ok)).to.have.length(3);
        for (const result of results.filter((r) => !r.ok)) expect(result).to.deep.equal({ ok: false, reason: 'balance', available: 0n });
        const { balance, held } = await store.balance(key.accountId);
        expect(balance).to.equal(300n);
        expect(held).to.equal(300n);
        expect(balance - held >= 0n).to.equal(true);
      });
    });

    describe('recordCharges', () => {
      it('charges the cost, removes the hold and adds to the key\'s spend', async () => {
        const { key } = await funded(1_000n);
        const hold = holdOf(key, 300n);
        await store.holdFunds(hold);
        const charge = chargeOf(key, hold.requestId, 140n);
        expect(await store.recordCharges([charge])).to.equal(1);
        expect(await store.balance(key.accountId)).to.deep.equal({ balance: 860n, held: 0n });
        expect(await spentOf(key)).to.equal(140n);
        expect(await store.listCharges({ accountId: key.accountId })).to.deep.equal([charge]);
        expect(await store.expiredHolds(new Date(Date.now() + 2 * HOUR_MS), 10)).to.deep.equal([]);
      });

      it('records each request id once: repeats, in a later call or the same batch, change nothing', async () => {
        const { key } = await funded(1_000n);
        const hold = holdOf(key, 300n);
        await store.holdFunds(hold);
        const charge = chargeOf(key, hold.requestId, 100n);
        expect(await store.recordCharges([charge, { ...charge, cost: 200n }])).to.equal(1);
        expect(await store.recordCharges([charge])).to.equal(0);
        expect(await store.recordCharges([{ ...charge, cost: 999n }])).to.equal(0);
        expect(await store.balance(key.accountId)).to.deep.equal({ balance: 900n, held: 0n });
        expect(await spentOf(key)).to.equal(100n);
        expect((await store.listCharges({})).map((c) => c.cost)).to.deep.equal([100n]);
      });

      it('records one charge when the same request id is settled 10 times concurrently', async () => {
        const { key } = await funded(1_000n);
        const hold = holdOf(key, 300n);
        await store.holdFunds(hold);
        const charge = chargeOf(key, hold.requestId, 250n);
        const counts = await Promise.all(Array.from({ length: 10 }, () => store.recordCharges([charge])));
        expect(counts.reduce((a, b) => a + b, 0)).to.equal(1);
        expect(await store.balance(key.accountId)).to.deep.equal({ balance: 750n, held: 0n });
        expect(await spentOf(key)).to.equal(250n);
      });

      it('records a charge above its hold in full, with its overage, and frees the hold (F3 revised)', async () => {
        const { key } = await funded(1_000n);
        const hold = holdOf(key, 300n);
        await store.holdFunds(hold);
        await store.recordCharges([chargeOf(key, hold.requestId, 700n, { held: 300n, overage: 400n })]);
        expect(await store.balance(key.accountId)).to.deep.equal({ balance: 300n, held: 0n });
        expect((await store.listCharges({ keyId: key.id }))[0]).to.deep.include({ cost: 700n, held: 300n, overage: 400n });
      });

      it('records a charge without a hold as priced, even below zero, never capping it to nothing', async () => {
        const { key } = await funded(100n);
        const other = holdOf(key, 70n);
        await store.holdFunds(other);
        expect(await store.recordCharges([chargeOf(key, 'req_released', 500n)])).to.equal(1);
        expect(await store.balance(key.accountId)).to.deep.equal({ balance: -400n, held: 70n });
        expect((await store.listCharges({ keyId: key.id }))[0].cost).to.equal(500n);
        // A balance below zero admits no new hold until it is topped up.
        expect(await store.holdFunds(holdOf(key, 1n))).to.deep.include({ ok: false, reason: 'balance' });
      });

      it('stores every token kind, tool calls, the client id and the prices, and reads them back', async () => {
        const { key } = await funded(1_000n);
        const prices = { tokens: { inputTokens: '1000', cacheWriteTokens: '1250', cacheWrite1hTokens: '2000', cacheReadTokens: '100', outputTokens: '5000', imageInputTokens: '0', imageOutputTokens: '0' }, tool_calls: { web_search: '10000000' } };
        const charge = chargeOf(key, 'req_kinds', 7n, { cacheWrite1hTokens: 3, toolCalls: { web_search: 2 }, clientRequestId: 'client-1', prices, held: 9n, unbilled: 4n });
        await store.recordCharges([charge]);
        expect(await store.listCharges({ keyId: key.id })).to.deep.equal([charge]);
      });

      it('records a zero-cost failed request without moving money, and releases its hold', async () => {
        const { key } = await funded(500n);
        const hold = holdOf(key, 200n);
        await store.holdFunds(hold);
        const failed = chargeOf(key, hold.requestId, 0n, { outcome: 'failed', status: 502, usageSource: 'none', provider: null, outputTokens: 0 });
        expect(await store.recordCharges([failed])).to.equal(1);
        expect(await store.balance(key.accountId)).to.deep.equal({ balance: 500n, held: 0n });
        expect(await store.listCharges({})).to.deep.equal([failed]);
      });

      it('records a batch across accounts in one call and counts only the new ones', async () => {
        const a = await funded(1_000n);
        const b = await funded(1_000n);
        const holds = [holdOf(a.key, 100n), holdOf(b.key, 100n), holdOf(a.key, 100n)];
        for (const hold of holds) await store.holdFunds(hold);
        await store.recordCharges([chargeOf(a.key, holds[0].requestId, 10n)]);
        const batch = [chargeOf(b.key, holds[1].requestId, 20n), chargeOf(a.key, holds[0].requestId, 10n), chargeOf(a.key, holds[2].requestId, 30n)];
        expect(await store.recordCharges(batch)).to.equal(2);
        expect(await store.balance(a.account.id)).to.deep.equal({ balance: 960n, held: 0n });
        expect(await store.balance(b.account.id)).to.deep.equal({ balance: 980n, held: 0n });
        expect(await store.recordCharges([])).to.equal(0);
      });
    });

    describe('releaseHolds and expiredHolds', () => {
      it('releases holds without charging, ignoring unknown and already released ids', async () => {
        const { key } = await funded(1_000n, { spendLimit: 500n });
        const holds = [holdOf(key, 200n), holdOf(key, 300n)];
        for (const hold of holds) await store.holdFunds(hold);
        expect(await store.releaseHolds([holds[0].requestId, 'req_unknown'])).to.equal(1);
        expect(await store.balance(key.accountId)).to.deep.equal({ balance: 1_000n, held: 300n });
        expect(await store.releaseHolds([holds[0].requestId, holds[1].requestId])).to.equal(1);
        expect(await store.balance(key.accountId)).to.deep.equal({ balance: 1_000n, held: 0n });
        expect(await store.releaseHolds([])).to.equal(0);
        expect(await store.listCharges({})).to.deep.equal([]);
        // The key's held part was released too: its whole limit can be held again.
        expect(await store.holdFunds(holdOf(key, 500n))).to.deep.equal({ ok: true });
      });

      it('lists holds that expired before `now`, oldest first, up to the limit', async () => {
        const { key } = await funded(1_000n);
        const now = Date.now();
        const late = holdOf(key, 10n, { expiresAt: new Date(now - 1_000) });
        const oldest = holdOf(key, 20n, { expiresAt: new Date(now - 3_000) });
        const middle = holdOf(key, 30n, { expiresAt: new Date(now - 2_000) });
        const live = holdOf(key, 40n, { expiresAt: new Date(now + HOUR_MS) });
        for (const hold of [late, oldest, middle, live]) await store.holdFunds(hold);
        expect(await store.expiredHolds(new Date(now), 10)).to.deep.equal([oldest, middle, late]);
        expect(await store.expiredHolds(new Date(now), 2)).to.deep.equal([oldest, middle]);
        // Strictly before: a hold expiring exactly at `now` is not yet expired.
        expect(await store.expiredHolds(new Date(now - 3_000), 10)).to.deep.equal([]);
      });
    });

    describe('credits and balance', () => {
      it('credits a positive amount, returns the record, and adds it to the balance exactly', async () => {
        const account = await store.createAccount({ name: 'alice', role: 'user' });
        const record = await store.credit({ accountId: account.id, amount: BEYOND_DOUBLE, kind: 'admin', actor: 'root', note: 'welcome' });
        expect(record.id).to.match(/^cr_[0-9a-f]{16}$/);
        expect(record).to.include({ accountId: account.id, kind: 'admin', actor: 'root', note: 'welcome' });
        expect(record.amount).to.equal(BEYOND_DOUBLE);
        expect(await store.balance(account.id)).to.deep.equal({ balance: BEYOND_DOUBLE, held: 0n });
        expect(await store.listCredits(account.id)).to.deep.equal([record]);
      });

      it('refuses a zero or negative credit and changes nothing', async () => {
        const account = await store.createAccount({ name: 'alice', role: 'user' });
        for (const amount of [0n, -5n]) {
          const error = await rejection(store.credit({ accountId: account.id, amount, kind: 'topup', actor: null, note: null }));
          expect(error).to.be.instanceOf(RangeError);
        }
        expect(await store.balance(account.id)).to.deep.equal({ balance: 0n, held: 0n });
        expect(await store.listCredits(account.id)).to.deep.equal([]);
      });

      it('refuses a credit to an unknown account', async () => {
        await rejection(store.credit({ accountId: 'acc_0000000000000000', amount: 5n, kind: 'topup', actor: null, note: null }));
        expect(await store.ledgerTotals()).to.deep.equal([]);
      });

      it('lists an account\'s credits newest first, up to the limit', async () => {
        const a = await store.createAccount({ name: 'a', role: 'user' });
        const b = await store.createAccount({ name: 'b', role: 'user' });
        for (const amount of [1n, 2n, 3n]) await store.credit({ accountId: a.id, amount, kind: 'topup', actor: null, note: null });
        await store.credit({ accountId: b.id, amount: 9n, kind: 'topup', actor: null, note: null });
        expect((await store.listCredits(a.id)).map((c) => c.amount)).to.deep.equal([3n, 2n, 1n]);
        expect((await store.listCredits(a.id, 2)).map((c) => c.amount)).to.deep.equal([3n, 2n]);
      });

      it('rejects the balance of an unknown account', async () => {
        expect((await rejection(store.balance('acc_0000000000000000'))).message).to.match(/no account/);
      });
    });

    describe('listCharges', () => {
      it('filters by account, key, model and time (since inclusive, until exclusive), newest first, limited', async () => {
        const a = await funded(1_000n);
        const b = await funded(1_000n);
        const otherKey = await store.createKey(newKey(a.account));
        const t0 = Date.UTC(2030, 0, 1);
        const at = (seconds: number) => new Date(t0 + seconds * 1000);
        const c1 = chargeOf(a.key, 'r1', 1n, { createdAt: at(0) });
        const c2 = chargeOf(a.key, 'r2', 2n, { createdAt: at(1), model: 'other-model' });
        const c3 = chargeOf(otherKey, 'r3', 3n, { createdAt: at(2) });
        const c4 = chargeOf(b.key, 'r4', 4n, { createdAt: at(3) });
        await store.recordCharges([c1, c2, c3, c4]);
        expect(await store.listCharges({})).to.deep.equal([c4, c3, c2, c1]);
        expect(await store.listCharges({ accountId: a.account.id })).to.deep.equal([c3, c2, c1]);
        expect(await store.listCharges({ keyId: a.key.id })).to.deep.equal([c2, c1]);
        expect(await store.listCharges({ model: 'other-model' })).to.deep.equal([c2]);
        expect(await store.listCharges({ since: at(1), until: at(3) })).to.deep.equal([c3, c2]);
        expect(await store.listCharges({ accountId: a.account.id, limit: 2 })).to.deep.equal([c3, c2]);
        expect(await store.listCharges({ accountId: b.account.id, model: 'other-model' })).to.deep.equal([]);
      });

      it('pages by cursor (ties broken by request id), filters by models, status and endpoint, and totals every match', async () => {
        const { account, key } = await funded(1_000_000n);
        const t0 = Date.UTC(2030, 0, 2);
        const same = new Date(t0);
        const charges = [
          chargeOf(key, 'p1', 10n, { createdAt: same }),
          chargeOf(key, 'p3', 30n, { createdAt: same, model: 'm2' }),
          chargeOf(key, 'p2', 20n, { createdAt: same, status: 502, outcome: 'failed' }),
          chargeOf(key, 'p4', BEYOND_DOUBLE, { createdAt: new Date(t0 + 1000), endpoint: 'messages' }),
        ];
        await store.recordCharges(charges);
        const first = await store.listCharges({ accountId: account.id, limit: 2, page: { before: null } });
        expect(first.map((c) => c.requestId)).to.deep.equal(['p4', 'p3']);
        const last = first[first.length - 1];
        const second = await store.listCharges({ accountId: account.id, limit: 2, page: { before: { createdAt: last.createdAt, requestId: last.requestId } } });
        expect(second.map((c) => c.requestId)).to.deep.equal(['p2', 'p1']);
        expect((await store.listCharges({ accountId: account.id, models: ['m2', 'gpt-test'], status: 'ok', endpoint: 'chat' })).map((c) => c.requestId)).to.deep.equal(['p3', 'p1']);
        expect(await store.listCharges({ accountId: account.id, models: [] })).to.deep.equal([]);
        expect(await store.chargeTotals({ accountId: account.id, limit: 1, page: { before: null } })).to.deep.equal({ requests: 4, cost: 60n + BEYOND_DOUBLE, failed: 1 });
        expect(await store.chargeTotals({ accountId: account.id, status: 'failed' })).to.deep.equal({ requests: 1, cost: 20n, failed: 1 });
        expect(await store.chargeTotals({ accountId: 'acc_none' })).to.deep.equal({ requests: 0, cost: 0n, failed: 0 });
      });
    });

    describe('refusals', () => {
      const refusal = (id: string, extra: Partial<RefusalRecord> = {}): RefusalRecord => ({
        id,
        createdAt: new Date(Date.UTC(2030, 0, 3)),
        accountId: null,
        keyId: null,
        memberAccountId: null,
        address: '203.0.113.9',
        model: 'gpt-test',
        endpoint: 'chat',
        status: 401,
        code: 'TOLLGATE_ERR_AUTH_INVALID_KEY',
        level: null,
        count: 1,
        sessionId: null,
        ...extra,
      });

      it('records rows, adds a repeated id\'s count to it, lists newest first by cursor and sums by reason', async () => {
        const { account, key } = await funded(0n);
        const t0 = Date.UTC(2030, 0, 3);
        const mine = { accountId: account.id, keyId: key.id, address: null, status: 402, code: 'TOLLGATE_ERR_BUDGET_EXCEEDED', level: 'budget:key:month' };
        await store.refusals.record([
          refusal('req_a', { ...mine, createdAt: new Date(t0) }),
          refusal('req_b', { ...mine, createdAt: new Date(t0 + 1000), sessionId: 's1' }),
          refusal('req_c', { createdAt: new Date(t0 + 2000) }),
          refusal('rfx_1', { ...mine, createdAt: new Date(t0 + 500), count: 3 }),
        ]);
        await store.refusals.record([refusal('rfx_1', { ...mine, createdAt: new Date(t0 + 3000), count: 2 })]);
        const listed = await store.refusals.list({ accountId: account.id, limit: 2 });
        expect(listed.map((row) => [row.id, row.count])).to.deep.equal([['rfx_1', 5], ['req_b', 1]]);
        expect(listed[0].createdAt.getTime()).to.equal(t0 + 3000);
        expect(listed[1]).to.deep.equal(refusal('req_b', { ...mine, createdAt: new Date(t0 + 1000), sessionId: 's1' }));
        const rest = await store.refusals.list({ accountId: account.id, limit: 10, before: { createdAt: listed[1].createdAt, id: listed[1].id } });
        expect(rest.map((row) => row.id)).to.deep.equal(['req_a']);
        expect((await store.refusals.list({ sessionId: 's1', limit: 10 })).map((row) => row.id)).to.deep.equal(['req_b']);
        expect((await store.refusals.list({ models: ['nope'], limit: 10 })).map((row) => row.id)).to.deep.equal([]);
        const summary = await store.refusals.summary({ since: new Date(t0), until: new Date(t0 + 10_000) });
        expect(summary.map((row) => [row.status, row.code, row.level, row.requests])).to.deep.equal([
          [402, 'TOLLGATE_ERR_BUDGET_EXCEEDED', 'budget:key:month', 7],
          [401, 'TOLLGATE_ERR_AUTH_INVALID_KEY', null, 1],
        ]);
        expect(summary[0].lastAt.getTime()).to.equal(t0 + 3000);
      });

      it("keeps the member of an organisation's key with a refusal, and reads them by member", async () => {
        const { account, key } = await funded(0n);
        const t0 = Date.UTC(2030, 0, 4);
        const ofMember = (id: string, memberAccountId: string | null, at: number) =>
          refusal(id, { accountId: account.id, keyId: key.id, memberAccountId, address: null, status: 429, code: 'TOLLGATE_ERR_RATE_LIMIT_REQUESTS', level: 'member', createdAt: new Date(t0 + at) });
        await store.refusals.record([ofMember('req_m1', 'acc_member_1', 0), ofMember('req_m2', 'acc_member_2', 1000), ofMember('req_m3', null, 2000)]);
        const mine = await store.refusals.list({ accountId: account.id, memberAccountId: 'acc_member_1', limit: 10 });
        expect(mine).to.deep.equal([ofMember('req_m1', 'acc_member_1', 0)]);
        expect((await store.refusals.list({ accountId: account.id, limit: 10, since: new Date(t0) })).map((row) => row.memberAccountId)).to.deep.equal([null, 'acc_member_2', 'acc_member_1']);
        const summary = await store.refusals.summary({ accountId: account.id, memberAccountId: 'acc_member_2' });
        expect(summary.map((row) => [row.code, row.level, row.requests])).to.deep.equal([['TOLLGATE_ERR_RATE_LIMIT_REQUESTS', 'member', 1]]);
      });
    });

    describe('usage analytics', () => {
      const t0 = Date.UTC(2030, 0, 1, 12);
      const at = (hours: number) => new Date(t0 + hours * 3_600_000);
      const range = { since: at(-24), until: at(48), limit: 100, offset: 0 };

      it('keeps what served a request and how (session, models, attempts, time to first byte, user agent, origin) and finds it by id', async () => {
        const { key } = await funded(1_000n);
        const charge = chargeOf(key, 'r-full', 7n, {
          sessionId: 'sess-1',
          requestedModel: 'fast',
          servedModel: 'gpt-4o-2024-08-06',
          attempts: [{ provider: 'a', outcome: 'status_503', ms: 12 }, { provider: 'b', outcome: 'ok', ms: 40 }],
          ttfbMs: 55,
          userAgent: 'claude-cli/2.1.90',
          origin: 'playground',
        });
        await store.recordCharges([charge]);
        expect(await store.findCharge('r-full')).to.deep.equal(charge);
        expect(await store.findCharge('r-none')).to.equal(null);
        expect(await store.listCharges({ sessionId: 'sess-1' })).to.deep.equal([charge]);
      });

      it('sums charges by model, key, day, session, account and provider, each adding up to the total', async () => {
        const a = await funded(10_000n);
        const b = await funded(10_000n);
        const second = await store.createKey(newKey(a.account));
        const charges = [
          chargeOf(a.key, 's1', 100n, { createdAt: at(0), sessionId: 'x', model: 'm1' }),
          chargeOf(a.key, 's2', 200n, { createdAt: at(1), sessionId: 'x', model: 'm2', status: 502, provider: 'p2' }),
          chargeOf(second, 's3', 300n, { createdAt: at(25), sessionId: 'y', model: 'm1' }),
          chargeOf(second, 's4', 400n, { createdAt: at(26), model: 'm2', provider: null }),
          chargeOf(b.key, 's5', 500n, { createdAt: at(2), sessionId: 'x', model: 'm1' }),
          // Outside the range: until is exclusive.
          chargeOf(a.key, 's6', 600n, { createdAt: at(48), sessionId: 'x', model: 'm1' }),
        ];
        await store.recordCharges(charges);
        const total = (rows: readonly UsageSummaryRow[]) => rows.reduce((sum, row) => sum + row.cost, 0n);
        for (const groupBy of ['model', 'key', 'day', 'account', 'provider'] as const) {
          expect(total(await store.usageSummary({ accountId: a.account.id, groupBy, ...range })), groupBy).to.equal(1_000n);
          expect(total(await store.usageSummary({ accountId: null, groupBy, ...range })), groupBy).to.equal(1_500n);
        }
        const byModel = await store.usageSummary({ accountId: a.account.id, groupBy: 'model', ...range });
        expect(byModel.map((row) => [row.group, row.requests, row.cost, row.errors])).to.deep.equal([['m2', 2, 600n, 1], ['m1', 2, 400n, 0]]);
        expect(byModel[0]).to.include({ inputTokens: 200, outputTokens: 100, cacheReadTokens: 4, cacheWriteTokens: 2 });
        expect(byModel[0].firstAt).to.deep.equal(at(1));
        expect(byModel[0].lastAt).to.deep.equal(at(26));
        const byDay = await store.usageSummary({ accountId: a.account.id, groupBy: 'day', ...range });
        expect(byDay.map((row) => [row.group, row.cost])).to.deep.equal([['2030-01-01', 300n], ['2030-01-02', 700n]]);
        const byKey = await store.usageSummary({ accountId: a.account.id, groupBy: 'key', ...range });
        expect(byKey.map((row) => [row.group, row.cost])).to.deep.equal([[second.id, 700n], [a.key.id, 300n]]);
        const byProvider = await store.usageSummary({ accountId: a.account.id, groupBy: 'provider', ...range });
        expect(byProvider.map((row) => [row.group, row.requests, row.errors])).to.deep.equal([['mock', 2, 0], [null, 1, 0], ['p2', 1, 1]]);
        // Sessions, newest first, with their models; the charges outside any session are one row (null), so the rows add up.
        const sessions = await store.usageSummary({ accountId: a.account.id, groupBy: 'session', ...range });
        expect(sessions.map((row) => [row.group, row.requests, row.cost, row.models])).to.deep.equal([[null, 1, 400n, ['m2']], ['y', 1, 300n, ['m1']], ['x', 2, 300n, ['m1', 'm2']]]);
        expect(total(sessions), 'session').to.equal(1_000n);
        const everyone = await store.usageSummary({ accountId: null, groupBy: 'session', sessionId: 'x', ...range });
        expect(everyone.map((row) => [row.group, row.requests, row.cost])).to.deep.equal([['x', 3, 800n]]);
        // Paged.
        const page = await store.usageSummary({ accountId: a.account.id, groupBy: 'model', ...range, limit: 1, offset: 1 });
        expect(page.map((row) => row.group)).to.deep.equal(['m1']);
        expect(await store.listCharges({ accountId: a.account.id, limit: 2, offset: 1 })).to.deep.equal([charges[3], charges[2]]);
      });

      it("sums an organisation's charges by member, and any grouping of one member's alone", async () => {
        const { account, key } = await funded(10_000n);
        const [ann, ben] = ['acc_member_ann', 'acc_member_ben'];
        await store.recordCharges([
          chargeOf(key, 'm1', 100n, { createdAt: at(0), sessionId: 'x', model: 'm1', memberAccountId: ann }),
          chargeOf(key, 'm2', 200n, { createdAt: at(1), sessionId: 'x', model: 'm2', memberAccountId: ben }),
          chargeOf(key, 'm3', 400n, { createdAt: at(2), sessionId: 'y', model: 'm1', memberAccountId: ann }),
          chargeOf(key, 'm4', 800n, { createdAt: at(3), model: 'm2' }),
        ]);
        const byMember = await store.usageSummary({ accountId: account.id, groupBy: 'member', ...range });
        expect(byMember.map((row) => [row.group, row.requests, row.cost])).to.deep.equal([[null, 1, 800n], [ann, 2, 500n], [ben, 1, 200n]]);
        const annsByModel = await store.usageSummary({ accountId: account.id, memberAccountId: ann, groupBy: 'model', ...range });
        expect(annsByModel.map((row) => [row.group, row.cost])).to.deep.equal([['m1', 500n]]);
        // A session's models are the member's own requests' only.
        const bensSessions = await store.usageSummary({ accountId: account.id, memberAccountId: ben, groupBy: 'session', namedSessionsOnly: true, ...range });
        expect(bensSessions.map((row) => [row.group, row.requests, row.models])).to.deep.equal([['x', 1, ['m2']]]);
        const annsSession = await store.usageSummary({ accountId: account.id, memberAccountId: ann, groupBy: 'session', sessionId: 'x', ...range });
        expect(annsSession.map((row) => [row.group, row.cost, row.models])).to.deep.equal([['x', 100n, ['m1']]]);
        expect(await store.usageSummary({ accountId: account.id, memberAccountId: ben, groupBy: 'session', sessionId: 'y', ...range })).to.deep.equal([]);
      });

      it("reports each key's last use and its spend since the day's and the month's start", async () => {
        const { account, key } = await funded(10_000n);
        const idle = await store.createKey(newKey(account));
        await store.recordCharges([
          chargeOf(key, 'k1', 10n, { createdAt: at(-24 * 40) }),
          chargeOf(key, 'k2', 20n, { createdAt: at(-20) }),
          chargeOf(key, 'k3', 40n, { createdAt: at(1) }),
        ]);
        const activity = await store.keyActivity(account.id, at(-12), at(-24 * 10));
        const byKey = new Map(activity.map((entry) => [entry.keyId, entry]));
        expect(byKey.get(key.id)).to.deep.equal({ keyId: key.id, lastUsedAt: at(1), spentToday: 40n, spentMonth: 60n });
        expect(byKey.get(idle.id)).to.deep.equal({ keyId: idle.id, lastUsedAt: null, spentToday: 0n, spentMonth: 0n });
      });
    });

    describe('ledgerTotals', () => {
      it('reports per account: credits − charges = balance, held = Σ open holds', async () => {
        const a = await funded(1_000n);
        const b = await funded(0n);
        await store.credit({ accountId: a.account.id, amount: 500n, kind: 'admin', actor: null, note: null });
        const holds = [holdOf(a.key, 400n), holdOf(a.key, 300n), holdOf(a.key, 200n)];
        for (const hold of holds) expect(await store.holdFunds(hold)).to.deep.equal({ ok: true });
        await store.recordCharges([chargeOf(a.key, holds[0].requestId, 250n), chargeOf(a.key, 'no-hold', 50n)]);
        await store.releaseHolds([holds[1].requestId]);

        const totals = await store.ledgerTotals();
        expect(totals.map((t) => t.accountId)).to.have.members([a.account.id, b.account.id]);
        const ta = totals.find((t) => t.accountId === a.account.id)!;
        expect(ta).to.deep.equal({
          accountId: a.account.id,
          accountName: a.account.name,
          credits: 1_500n,
          charges: 300n,
          debits: 0n,
          balance: 1_200n,
          held: 200n,
          openHolds: 200n,
        });
        const tb = totals.find((t) => t.accountId === b.account.id)!;
        expect(tb).to.include({ accountName: b.account.name });
        expect([tb.credits, tb.charges, tb.balance, tb.held, tb.openHolds]).to.deep.equal([0n, 0n, 0n, 0n, 0n]);
      });
    });

    describe('redemption codes', () => {
      const codeHash = () => generateApiKey().hash;

      it('creates codes, lists them newest first, and refuses a worthless code', async () => {
        const expiresAt = new Date(Date.now() + HOUR_MS);
        const first = await store.createRedemptionCodes({ hashes: [codeHash()], amount: 5n, createdBy: 'admin', expiresAt: null });
        const batch = await store.createRedemptionCodes({ hashes: [codeHash(), codeHash()], amount: BEYOND_DOUBLE, createdBy: null, expiresAt });
        expect(batch).to.have.length(2);
        expect(batch[0].id).to.match(/^rc_[0-9a-f]{16}$/);
        expect(batch[0]).to.include({ createdBy: null, redeemedBy: null, redeemedAt: null });
        expect(batch[0].amount).to.equal(BEYOND_DOUBLE);
        expect(batch[0].expiresAt!.getTime()).to.equal(expiresAt.getTime());
        const listed = await store.listRedemptionCodes();
        expect(listed.map((c) => c.id)).to.deep.equal([batch[1].id, batch[0].id, first[0].id]);
        expect(listed[2]).to.deep.equal(first[0]);
        expect(await store.listRedemptionCodes(1)).to.have.length(1);
        expect(await rejection(store.createRedemptionCodes({ hashes: [codeHash()], amount: 0n, createdBy: null, expiresAt: null }))).to.be.instanceOf(RangeError);
      });

      it('redeems a code once for its own value; later attempts are used, and unknown and expired codes refused', async () => {
        const alice = await store.createAccount({ name: 'alice', role: 'user' });
        const bob = await store.createAccount({ name: 'bob', role: 'user' });
        const hash = codeHash();
        const [code] = await store.createRedemptionCodes({ hashes: [hash], amount: 750n, createdBy: 'admin', expiresAt: null });

        const result = await store.redeemCode(hash, alice.id, 'alice');
        expect(result.ok).to.equal(true);
        if (!result.ok) return;
        expect(result.credit).to.include({ accountId: alice.id, kind: 'redemption', actor: 'alice' });
        expect(result.credit.amount).to.equal(750n);
        expect(await store.listCredits(alice.id)).to.deep.equal([result.credit]);
        expect(await store.balance(alice.id)).to.deep.equal({ balance: 750n, held: 0n });
        const [listed] = await store.listRedemptionCodes();
        expect(listed).to.include({ id: code.id, redeemedBy: alice.id });
        expect(listed.redeemedAt).to.be.instanceOf(Date);

        expect(await store.redeemCode(hash, alice.id, 'alice')).to.deep.equal({ ok: false, reason: 'used' });
        expect(await store.redeemCode(hash, bob.id, 'bob')).to.deep.equal({ ok: false, reason: 'used' });
        expect(await store.redeemCode(codeHash(), bob.id, 'bob')).to.deep.equal({ ok: false, reason: 'unknown' });

        const expired = codeHash();
        await store.createRedemptionCodes({ hashes: [expired], amount: 5n, createdBy: null, expiresAt: new Date(Date.now() - 1_000) });
        expect(await store.redeemCode(expired, bob.id, 'bob')).to.deep.equal({ ok: false, reason: 'expired' });
        expect(await store.balance(bob.id)).to.deep.equal({ balance: 0n, held: 0n });
        expect(await store.listCredits(bob.id)).to.deep.equal([]);
      });

      it('redeems a code exactly once when 20 redemptions race for it', async () => {
        const accounts = await Promise.all([0, 1].map((i) => store.createAccount({ name: `racer-${i}`, role: 'user' })));
        const hash = codeHash();
        await store.createRedemptionCodes({ hashes: [hash], amount: 100n, createdBy: null, expiresAt: null });
        const results = await Promise.all(Array.from({ length: 20 }, (_, i) => store.redeemCode(hash, accounts[i % 2].id, null)));
        expect(results.filter((r) => r.ok)).to.have.length(1);
        for (const result of results.filter((r) => !r.ok)) expect(result).to.deep.equal({ ok: false, reason: 'used' });
        const balances = await Promise.all(accounts.map((a) => store.balance(a.id)));
        expect(balances.reduce((sum, b) => sum + b.balance, 0n)).to.equal(100n);
        const totals = await store.ledgerTotals();
        expect(totals.reduce((sum, t) => sum + t.credits, 0n)).to.equal(100n);
      });
    });

    describe('console: accounts, logins, key limits, sessions and daily usage', () => {
      const secretHash = () => generateApiKey().hash;

      it('creates an account with a lower-cased e-mail and finds it again with it', async () => {
        const carol = await store.createAccount({ name: 'carol', role: 'user', email: 'Carol@Example.COM', passwordHash: 'hash-1' });
        expect(carol).to.include({ name: 'carol', email: 'carol@example.com', role: 'user', disabled: false });
        expect(await store.findAccountByName('carol')).to.deep.equal(carol);
        expect(await store.findAccountById(carol.id)).to.deep.equal(carol);
        // Accounts without an e-mail do not collide with one another.
        const dave = await store.createAccount({ name: 'dave', role: 'user' });
        const erin = await store.createAccount({ name: 'erin', role: 'admin', email: null });
        expect([dave.email, erin.email]).to.deep.equal([null, null]);
        expect(await store.countAccounts()).to.equal(3);
      });

      it('rejects a taken name or a taken e-mail in another case with AccountExistsError', async () => {
        await store.createAccount({ name: 'carol', role: 'user', email: 'carol@example.com' });
        const sameName = await rejection(store.createAccount({ name: 'carol', role: 'user', email: 'other@example.com' }));
        expect(sameName).to.be.instanceOf(AccountExistsError);
        expect((sameName as AccountExistsError).accountName).to.equal('carol');
        expect((sameName as AccountExistsError).field).to.equal('name');
        const sameEmail = await rejection(store.createAccount({ name: 'caroline', role: 'user', email: 'CAROL@example.com' }));
        expect(sameEmail).to.be.instanceOf(AccountExistsError);
        expect((sameEmail as AccountExistsError).field).to.equal('email');
        expect((sameEmail as AccountExistsError).accountName).to.equal('carol@example.com');
        expect(await store.countAccounts()).to.equal(1);
        expect(await store.findAccountByName('caroline')).to.equal(null);
      });

      it('rejects a name that differs from a taken one only in case', async () => {
        await store.createAccount({ name: 'carol', role: 'user' });
        const shouting = await rejection(store.createAccount({ name: 'Carol', role: 'user' }));
        expect(shouting).to.be.instanceOf(AccountExistsError);
        expect((shouting as AccountExistsError).field).to.equal('name');
        expect(await store.countAccounts()).to.equal(1);
      });

      it('ends every session and token of an account but the one kept, and records when one was used', async () => {
        const carol = await store.createAccount({ name: 'carol', role: 'user' });
        const dave = await store.createAccount({ name: 'dave', role: 'user' });
        const later = new Date(Date.now() + 3_600_000);
        const hash = (n: number) => Buffer.alloc(32, n);
        const kept = await store.createSession({ accountId: carol.id, hash: hash(1), kind: 'session', name: null, expiresAt: later, userAgent: 'Firefox' });
        await store.createSession({ accountId: carol.id, hash: hash(2), kind: 'session', name: null, expiresAt: later });
        await store.createSession({ accountId: carol.id, hash: hash(3), kind: 'token', name: 'ci', expiresAt: later });
        await store.createSession({ accountId: dave.id, hash: hash(4), kind: 'token', name: null, expiresAt: later });
        expect(kept.userAgent).to.equal('Firefox');
        expect(kept.lastUsedAt).to.equal(null);
        expect(await store.endSessions(carol.id, kept.id)).to.equal(2);
        expect((await store.listSessions(carol.id, 'session')).map((session) => session.id)).to.deep.equal([kept.id]);
        expect(await store.listSessions(carol.id, 'token')).to.deep.equal([]);
        expect(await store.listSessions(dave.id, 'token')).to.have.length(1);
        const used = new Date(Date.now() - 5_000);
        await store.touchSession(kept.id, used);
        const found = await store.findSession(hash(1), new Date());
        expect(found?.session.lastUsedAt?.getTime()).to.equal(used.getTime());
        expect(found?.session.userAgent).to.equal('Firefox');
        expect(await store.endSessions(carol.id)).to.equal(1);
        expect(await store.findSession(hash(1), new Date())).to.equal(null);
      });

      it('finds a login by name or by e-mail in any case, with its password hash', async () => {
        const carol = await store.createAccount({ name: 'carol', role: 'user', email: 'carol@example.com', passwordHash: 'hash-1' });
        const dave = await store.createAccount({ name: 'dave', role: 'admin' });
        expect(await store.findLogin('carol')).to.deep.equal({ account: carol, passwordHash: 'hash-1' });
        expect(await store.findLogin('CaRoL@ExAmPlE.cOm')).to.deep.equal({ account: carol, passwordHash: 'hash-1' });
        expect(await store.findLogin('dave')).to.deep.equal({ account: dave, passwordHash: null });
        // Names are unique whatever their case, so one account answers to every spelling.
        expect(await store.findLogin('CAROL')).to.deep.equal({ account: carol, passwordHash: 'hash-1' });
        expect(await store.findAccountByName('Carol')).to.deep.equal(carol);
        expect(await store.findLogin('nobody')).to.equal(null);
        expect(await store.findLogin('nobody@example.com')).to.equal(null);
      });

      it('sets a password on one account only, and reports unknown accounts', async () => {
        const carol = await store.createAccount({ name: 'carol', role: 'user', passwordHash: 'hash-1' });
        const dave = await store.createAccount({ name: 'dave', role: 'user' });
        expect(await store.setPassword(dave.id, 'hash-2')).to.equal(true);
        expect((await store.findLogin('dave'))!.passwordHash).to.equal('hash-2');
        expect((await store.findLogin('carol'))!.passwordHash).to.equal('hash-1');
        expect(await store.setPassword(carol.id, 'hash-3')).to.equal(true);
        expect((await store.findLogin('carol'))!.passwordHash).to.equal('hash-3');
        expect(await store.setPassword('acc_0000000000000000', 'hash-4')).to.equal(false);
      });

      it('lists every account oldest first with its balance and held amount', async () => {
        expect(await store.listAccounts()).to.deep.equal([]);
        const alice = await store.createAccount({ name: 'alice', role: 'admin', email: 'alice@example.com', passwordHash: 'secret' });
        const bob = await store.createAccount({ name: 'bob', role: 'user' });
        await store.credit({ accountId: bob.id, amount: BEYOND_DOUBLE, kind: 'admin', actor: 'test', note: null });
        const key = await store.createKey(newKey(bob));
        expect(await store.holdFunds(holdOf(key, 7n))).to.deep.equal({ ok: true });
        expect(await store.listAccounts()).to.deep.equal([
          { ...alice, balance: 0n, held: 0n },
          { ...bob, balance: BEYOND_DOUBLE, held: 7n },
        ]);
      });

      it('disables and re-enables an account, seen through its keys and its login, and moves keysRevision', async () => {
        const alice = await store.createAccount({ name: 'alice', role: 'user' });
        const other = await store.createAccount({ name: 'other', role: 'user' });
        const input = newKey(alice);
        await store.createKey(input);
        const before = store.keysRevision();
        expect(await store.setAccountDisabled(alice.id, true)).to.equal(true);
        expect(store.keysRevision()).not.to.equal(before);
        expect((await store.findAccountById(alice.id))!.disabled).to.equal(true);
        expect((await store.findKeyByHash(input.hash))!.account).to.deep.equal({ ...alice, disabled: true });
        expect((await store.findLogin('alice'))!.account.disabled).to.equal(true);
        expect((await store.findAccountById(other.id))!.disabled).to.equal(false);
        expect(await store.setAccountDisabled(alice.id, false)).to.equal(true);
        expect((await store.findKeyByHash(input.hash))!.account).to.deep.equal(alice);
        expect(await store.setAccountDisabled('acc_0000000000000000', true)).to.equal(false);
      });

      it('keeps a key\'s rate limits, and null for a key without any', async () => {
        const alice = await store.createAccount({ name: 'alice', role: 'user', email: 'alice@example.com' });
        const input = newKey(alice, { rateLimits: { rpm: 60, tpm: 100_000, concurrency: 4 } });
        const limited = await store.createKey(input);
        const plain = await store.createKey(newKey(alice));
        expect(limited.rateLimits).to.deep.equal({ rpm: 60, tpm: 100_000, concurrency: 4 });
        expect(plain.rateLimits).to.equal(null);
        expect(await store.listKeys({ accountId: alice.id })).to.deep.equal([limited, plain]);
        const identity = await store.findKeyByHash(input.hash);
        expect(identity!.key).to.deep.equal(limited);
        expect(identity!.account).to.deep.equal(alice);
      });

      it('changes only the key limits given, clears one given as null, and reports unknown keys', async () => {
        const alice = await store.createAccount({ name: 'alice', role: 'user' });
        const input = newKey(alice, { spendLimit: 100n, models: ['a'], rateLimits: { rpm: 60 } });
        const key = await store.createKey(input);
        const limitsOf = async () => {
          const found = (await store.findKeyByHash(input.hash))!.key;
          return { spendLimit: found.spendLimit, models: found.models, rateLimits: found.rateLimits };
        };

        let revision = store.keysRevision();
        expect(await store.setKeyLimits(key.id, { rateLimits: { concurrency: 2 } })).to.equal(true);
        expect(store.keysRevision(), 'a rate-limit change moves keysRevision').not.to.equal(revision);
        expect(await limitsOf()).to.deep.equal({ spendLimit: 100n, models: ['a'], rateLimits: { concurrency: 2 } });

        expect(await store.setKeyLimits(key.id, { spendLimit: BEYOND_DOUBLE })).to.equal(true);
        expect(await limitsOf()).to.deep.equal({ spendLimit: BEYOND_DOUBLE, models: ['a'], rateLimits: { concurrency: 2 } });

        expect(await store.setKeyLimits(key.id, { models: null })).to.equal(true);
        expect(await limitsOf()).to.deep.equal({ spendLimit: BEYOND_DOUBLE, models: null, rateLimits: { concurrency: 2 } });

        revision = store.keysRevision();
        expect(await store.setKeyLimits(key.id, { rateLimits: null, models: ['b', 'c'] })).to.equal(true);
        expect(store.keysRevision()).not.to.equal(revision);
        expect(await limitsOf()).to.deep.equal({ spendLimit: BEYOND_DOUBLE, models: ['b', 'c'], rateLimits: null });

        expect(await store.setKeyLimits(key.id, {})).to.equal(true);
        expect(await limitsOf()).to.deep.equal({ spendLimit: BEYOND_DOUBLE, models: ['b', 'c'], rateLimits: null });
        expect(await store.setKeyLimits(key.id, { spendLimit: null })).to.equal(true);
        expect(await limitsOf()).to.deep.equal({ spendLimit: null, models: ['b', 'c'], rateLimits: null });

        expect(await store.setKeyLimits('key_doesnotexist00', { rateLimits: { rpm: 1 } })).to.equal(false);
        expect(await store.setKeyLimits('key_doesnotexist00', {})).to.equal(false);
      });

      it("keeps a key's allowed networks and its operator's limits apart, and moves keysRevision for each", async () => {
        const account = await store.createAccount({ name: 'netted', role: 'user' });
        const operator = { spendLimit: 5n * 10n ** 18n, models: ['a'], rateLimits: { rpm: 2 }, allowedNetworks: ['10.0.0.0/8'] };
        const input = newKey(account, { allowedNetworks: ['192.0.2.0/24'], operatorLimits: operator });
        const key = await store.createKey(input);
        expect(key.allowedNetworks).to.deep.equal(['192.0.2.0/24']);
        expect(key.operatorLimits).to.deep.equal(operator);
        const read = async () => (await store.listKeys({ accountId: account.id }))[0];
        expect((await read()).operatorLimits).to.deep.equal(operator);
        let revision = store.keysRevision();
        expect(await store.setKeyLimits(key.id, { allowedNetworks: ['2001:db8::/32', '10.1.0.0/16'] })).to.equal(true);
        expect(store.keysRevision()).not.to.equal(revision);
        expect((await read()).allowedNetworks).to.deep.equal(['2001:db8::/32', '10.1.0.0/16']);
        revision = store.keysRevision();
        expect(await store.setKeyLimits(key.id, { operatorLimits: { models: ['b'] } })).to.equal(true);
        expect(store.keysRevision()).not.to.equal(revision);
        expect((await read()).operatorLimits).to.deep.equal({ models: ['b'] });
        expect(await store.setKeyLimits(key.id, { operatorLimits: null, allowedNetworks: null })).to.equal(true);
        expect(await read()).to.deep.include({ operatorLimits: null, allowedNetworks: null });
        expect(await store.setKeyLimits(key.id, { allowedNetworks: ['10.0.0.0/8'] })).to.equal(true);
        expect((await store.findKeyByHash(input.hash))?.key.allowedNetworks).to.deep.equal(['10.0.0.0/8']);
      });

      it('creates a session and finds it with its account until it expires', async () => {
        const alice = await store.createAccount({ name: 'alice', role: 'user', email: 'alice@example.com' });
        const now = Date.now();
        const hash = secretHash();
        const expiresAt = new Date(now + HOUR_MS);
        const session = await store.createSession({ accountId: alice.id, hash, kind: 'session', name: null, expiresAt });
        expect(session.id).to.match(/^ses_[0-9a-f]{16}$/);
        expect(session).to.include({ accountId: alice.id, kind: 'session', name: null });
        expect(session.createdAt).to.be.instanceOf(Date);
        expect(session.expiresAt!.getTime()).to.equal(expiresAt.getTime());

        expect(await store.findSession(hash, new Date(now))).to.deep.equal({ session, account: alice });
        expect(await store.findSession(hash, new Date(now + HOUR_MS - 1))).not.to.equal(null);
        // Expired from its expiry time on.
        expect(await store.findSession(hash, new Date(now + HOUR_MS))).to.equal(null);
        expect(await store.findSession(hash, new Date(now + 2 * HOUR_MS))).to.equal(null);
        expect(await store.findSession(secretHash(), new Date(now))).to.equal(null);

        // A management token without an expiry never expires; the account comes with its current state.
        const tokenHash = secretHash();
        const token = await store.createSession({ accountId: alice.id, hash: tokenHash, kind: 'token', name: 'ci', expiresAt: null });
        expect(token).to.include({ kind: 'token', name: 'ci', expiresAt: null });
        await store.setAccountDisabled(alice.id, true);
        expect(await store.findSession(tokenHash, new Date(now + 1_000 * 24 * HOUR_MS))).to.deep.equal({
          session: token,
          account: { ...alice, disabled: true },
        });
      });

      it('rejects a session whose hash is not 32 bytes or is already used', async () => {
        const alice = await store.createAccount({ name: 'alice', role: 'user' });
        const hash = secretHash();
        await rejection(store.createSession({ accountId: alice.id, hash: Buffer.alloc(16), kind: 'session', name: null, expiresAt: null }));
        await store.createSession({ accountId: alice.id, hash, kind: 'session', name: null, expiresAt: null });
        await rejection(store.createSession({ accountId: alice.id, hash, kind: 'token', name: null, expiresAt: null }));
        expect(await store.listSessions(alice.id, 'session')).to.have.length(1);
        expect(await store.listSessions(alice.id, 'token')).to.deep.equal([]);
      });

      it('lists an account\'s sessions or tokens newest first, and deletes one only for its own account', async () => {
        const alice = await store.createAccount({ name: 'alice', role: 'user' });
        const bob = await store.createAccount({ name: 'bob', role: 'user' });
        const later = new Date(Date.now() + HOUR_MS);
        const hashes = [secretHash(), secretHash(), secretHash(), secretHash()];
        const first = await store.createSession({ accountId: alice.id, hash: hashes[0], kind: 'session', name: null, expiresAt: later });
        await sleep(5);
        const token = await store.createSession({ accountId: alice.id, hash: hashes[1], kind: 'token', name: 'deploy', expiresAt: null });
        await sleep(5);
        const second = await store.createSession({ accountId: alice.id, hash: hashes[2], kind: 'session', name: null, expiresAt: later });
        const bobs = await store.createSession({ accountId: bob.id, hash: hashes[3], kind: 'session', name: null, expiresAt: later });

        expect(await store.listSessions(alice.id, 'session')).to.deep.equal([second, first]);
        expect(await store.listSessions(alice.id, 'token')).to.deep.equal([token]);
        expect(await store.listSessions(bob.id, 'session')).to.deep.equal([bobs]);
        expect(await store.listSessions(bob.id, 'token')).to.deep.equal([]);

        expect(await store.deleteSession(first.id, bob.id), 'another account cannot end it').to.equal(false);
        expect(await store.findSession(hashes[0], new Date())).not.to.equal(null);
        expect(await store.deleteSession(first.id, alice.id)).to.equal(true);
        expect(await store.deleteSession(first.id, alice.id)).to.equal(false);
        expect(await store.findSession(hashes[0], new Date())).to.equal(null);
        expect(await store.listSessions(alice.id, 'session')).to.deep.equal([second]);
        expect(await store.deleteSession(token.id, alice.id)).to.equal(true);
        expect(await store.listSessions(alice.id, 'token')).to.deep.equal([]);
        expect(await store.listSessions(bob.id, 'session')).to.deep.equal([bobs]);
      });

      it('deletes the sessions expired at `now`, keeps live ones and those that never expire, and counts them', async () => {
        const alice = await store.createAccount({ name: 'alice', role: 'user' });
        const bob = await store.createAccount({ name: 'bob', role: 'user' });
        const now = Date.now();
        const make = (accountId: string, kind: 'session' | 'token', expiresAt: Date | null) =>
          store.createSession({ accountId, hash: secretHash(), kind, name: null, expiresAt });
        await make(alice.id, 'session', new Date(now - 2_000));
        await make(bob.id, 'session', new Date(now - 1_000));
        await make(bob.id, 'token', new Date(now - 1));
        const live = await make(alice.id, 'session', new Date(now + HOUR_MS));
        const forever = await make(bob.id, 'token', null);

        expect(await store.deleteExpiredSessions(new Date(now))).to.equal(3);
        expect(await store.deleteExpiredSessions(new Date(now))).to.equal(0);
        expect(await store.listSessions(alice.id, 'session')).to.deep.equal([live]);
        expect(await store.listSessions(bob.id, 'session')).to.deep.equal([]);
        expect(await store.listSessions(bob.id, 'token')).to.deep.equal([forever]);
      });

      it('sums charges per UTC day from `since` on, oldest first, for one account or all, leaving out days without any', async () => {
        const a = await funded(1_000_000n);
        const b = await funded(BEYOND_DOUBLE + 1_000n);
        const at = (day: number, hours: number, minutes = 0, seconds = 0) => new Date(Date.UTC(2030, 0, day, hours, minutes, seconds));
        const charges = [
          chargeOf(a.key, 'u0', 1n, { createdAt: at(1, 0, 0, -1) }), // 2029-12-31 23:59:59, before `since`
          chargeOf(a.key, 'u1', 5n, { createdAt: at(1, 0) }), // exactly `since`: counted
          chargeOf(a.key, 'u2', 10n, { createdAt: at(1, 23, 59, 59) }),
          chargeOf(a.key, 'u3', 0n, { createdAt: at(2, 0), outcome: 'failed', status: 502, usageSource: 'none' }),
          chargeOf(a.key, 'u4', 7n, { createdAt: at(2, 0, 0, 1) }),
          chargeOf(b.key, 'u5', BEYOND_DOUBLE, { createdAt: at(2, 12) }),
          chargeOf(a.key, 'u6', 3n, { createdAt: at(4, 9) }),
        ];
        expect(await store.recordCharges(charges)).to.equal(charges.length);
        const since = at(1, 0);

        expect(await store.dailyUsage(a.account.id, since)).to.deep.equal([
          { day: '2030-01-01', requests: 2, cost: 15n },
          { day: '2030-01-02', requests: 2, cost: 7n },
          { day: '2030-01-04', requests: 1, cost: 3n },
        ]);
        expect(await store.dailyUsage(b.account.id, since)).to.deep.equal([{ day: '2030-01-02', requests: 1, cost: BEYOND_DOUBLE }]);
        expect(await store.dailyUsage(null, since)).to.deep.equal([
          { day: '2030-01-01', requests: 2, cost: 15n },
          { day: '2030-01-02', requests: 3, cost: BEYOND_DOUBLE + 7n },
          { day: '2030-01-04', requests: 1, cost: 3n },
        ]);
        expect(await store.dailyUsage(null, at(0, 0))).to.deep.equal([
          { day: '2029-12-31', requests: 1, cost: 1n },
          { day: '2030-01-01', requests: 2, cost: 15n },
          { day: '2030-01-02', requests: 3, cost: BEYOND_DOUBLE + 7n },
          { day: '2030-01-04', requests: 1, cost: 3n },
        ]);
        expect(await store.dailyUsage(a.account.id, at(5, 0))).to.deep.equal([]);
        expect(await store.dailyUsage('acc_0000000000000000', since)).to.deep.equal([]);
      });
    });

    describe('audit log', () => {
      const entry = (extra: Partial<NewAuditEntry> = {}): NewAuditEntry => ({
        actor: 'alice',
        surface: 'console',
        action: 'key.limits',
        target: 'key_0000000000000001',
        accountId: 'acc_0000000000000001',
        before: { spend_limit: null, models: ['a', 'b'] },
        after: { spend_limit: '12.5', models: null, nested: { rpm: 3 } },
        requestId: 'req_1',
        ...extra,
      });

      it('appends an entry with an aud_ id and the time, and lists it back exactly', async () => {
        const before = Date.now();
        const appended = await store.appendAudit(entry());
        expect(appended.id).to.match(/^aud_[0-9a-f]{16}$/);
        expect(appended.at.getTime()).to.be.within(before, Date.now());
        expect(await store.listAudit({})).to.deep.equal([appended]);
      });

      it('lists newest first, entries made in the same millisecond in reverse order of appending', async () => {
        const ids: string[] = [];
        for (let index = 0; index < 5; index++) ids.push((await store.appendAudit(entry({ requestId: `req_${index}` }))).id);
        expect((await store.listAudit({})).map((record) => record.id)).to.deep.equal(ids.reverse());
        expect(await store.listAudit({ limit: 2 })).to.have.length(2);
      });

      it('filters by actor, by target (the target or its account), by action and by time', async () => {
        const first = await store.appendAudit(entry({ actor: 'alice', target: 'key_1', accountId: 'acc_1', action: 'key.create' }));
        await sleep(5);
        const middle = new Date();
        await sleep(5);
        const second = await store.appendAudit(entry({ actor: 'cli:root', target: 'acc_1', accountId: 'acc_1', action: 'account.credit' }));
        const third = await store.appendAudit(entry({ actor: 'SIGHUP', surface: 'server', target: 'gateway.yaml', accountId: null, before: null, after: null, requestId: null, action: 'config.reload' }));
        const ids = (records: { id: string }[]) => records.map((record) => record.id);
        expect(ids(await store.listAudit({ actor: 'alice' }))).to.deep.equal([first.id]);
        expect(ids(await store.listAudit({ target: 'acc_1' }))).to.deep.equal([second.id, first.id]);
        expect(ids(await store.listAudit({ target: 'key_1' }))).to.deep.equal([first.id]);
        expect(ids(await store.listAudit({ action: 'config.reload' }))).to.deep.equal([third.id]);
        expect(ids(await store.listAudit({ since: middle }))).to.deep.equal([third.id, second.id]);
        expect(ids(await store.listAudit({ until: middle }))).to.deep.equal([first.id]);
        expect(ids(await store.listAudit({ actor: 'cli:root', since: middle, target: 'acc_1' }))).to.deep.equal([second.id]);
        expect(await store.listAudit({ actor: 'nobody' })).to.deep.equal([]);
        expect((await store.listAudit({ action: 'config.reload' }))[0]).to.deep.include({ surface: 'server', before: null, after: null, requestId: null, accountId: null });
      });
    });

    describe('refused charges', () => {
      it('the ledger writer sets a refused charge aside, with the error, and writes every other one', async () => {
        const accounts = await Promise.all([funded(10_000n), funded(10_000n), funded(10_000n)]);
        const good = accounts.map(({ key }) => chargeOf(key, `req_${randomUUID()}`, 100n));
        // A cost no 64-bit column holds: both stores refuse the record itself.
        const bad = chargeOf(accounts[1].key, `req_${randomUUID()}`, 2n ** 64n);
        // An account the store does not hold: a broken foreign key, which each binding reports its own way.
        const orphan = chargeOf(accounts[2].key, `req_${randomUUID()}`, 100n, { accountId: 'acc_0000000000000000' });
        const setAside: string[] = [];
        const lines: string[] = [];
        const writer = new LedgerWriter(store, { intervalMs: 5, maxRecords: 100, onSetAside: (charge) => setAside.push(charge.requestId) }, captureLogger('info', lines));
        for (const charge of [good[0], bad, good[1], orphan, good[2]]) writer.enqueue(charge);
        const started = Date.now();
        while (writer.pending > 0 && Date.now() - started < 5000) await sleep(10);
        expect(writer.pending, 'left queued').to.equal(0);
        // Within a second on a quiet machine; the margin is for a loaded one.
        expect(Date.now() - started, 'ms until written').to.be.below(3000);
        for (const [index, { account }] of accounts.entries()) {
          expect((await store.listCharges({ accountId: account.id })).map((charge) => charge.requestId)).to.deep.equal([good[index].requestId]);
          expect((await store.balance(account.id)).balance).to.equal(9_900n);
        }
        expect(setAside).to.have.members([bad.requestId, orphan.requestId]);
        const keptAll = await store.listSetAsideCharges();
        expect(keptAll.map((row) => row.requestId)).to.have.members([bad.requestId, orphan.requestId]);
        expect(keptAll.find((row) => row.requestId === orphan.requestId)!.accountId).to.equal('acc_0000000000000000');
        const kept = keptAll.find((row) => row.requestId === bad.requestId)!;
        expect(kept.accountId).to.equal(bad.accountId);
        expect(kept.error).to.not.equal('');
        expect(JSON.parse(kept.record)).to.include({ requestId: bad.requestId, cost: String(2n ** 64n) });
        const errors = lines.map((line) => JSON.parse(line) as { level: string; requestId?: string }).filter((line) => line.level === 'error');
        expect(errors.map((line) => line.requestId)).to.have.members([bad.requestId, orphan.requestId]);
        await writer.close();
      });
    });

    describe('ping and close', () => {
      it('answers ping until closed, and closing twice is fine', async () => {
        expect(await store.ping()).to.equal(true);
        await store.close();
        expect(await store.ping()).to.equal(false);
        await store.close();
      });
    });
  });
}
