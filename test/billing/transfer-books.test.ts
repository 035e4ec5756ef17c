/**
 * Transfers in every balance book: the in-process one (SQLite, one instance), the store's rows (SQLite
 * under workers, PostgreSQL without Redis) and Redis (two books sharing one prefix, as two instances
 * do). A transfer is refused what the source's holds have taken, racing holds and transfers on both
 * instances never overspend the source, and the ledger and the live balances agree after.
 */
import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import type { BalanceBook } from '../../src/billing/book';
import { verifyLedgerCommand, verifyLiveBalances } from '../../src/cli/ledger';
import { bookSetups, type Setup } from '../helpers/balance-books';

const UNIT = 1_000_000_000n;

for (const [name, open] of Object.entries(bookSetups('transfers'))) {
  describe(`billing/transfers in the ${name}`, function () {
    this.timeout(30_000);
    let setup: Setup;

    before(async function () {
      const opened = await open();
      if (typeof opened === 'string') {
        console.log(`      ${opened}: skipped`);
        this.skip();
      }
      setup = opened;
    });

    after(async () => setup?.close());

    async function account(funds: bigint): Promise<{ accountId: string; keyId: string }> {
      const made = await setup.store.createAccount({ name: `t${randomBytes(4).toString('hex')}`, role: 'user' });
      const key = await setup.store.createKey({ accountId: made.id, name: null, hash: randomBytes(32), prefix: 'sk-t', last4: 'abcd' });
      if (funds > 0n) await setup.books[0].credit({ accountId: made.id, amount: funds, kind: 'admin', actor: 'test', note: null });
      return { accountId: made.id, keyId: key.id };
    }

    function hold(book: BalanceBook, who: { accountId: string; keyId: string }, amount: bigint) {
      return book.hold({ ...who, requestId: `req_${randomBytes(6).toString('hex')}`, amount, expiresAt: new Date(Date.now() + 60_000), keyLimited: false });
    }

    async function ledgerClean(): Promise<void> {
      const lines: string[] = [];
      expect((await verifyLedgerCommand(setup.store, (line) => lines.push(line))).drifted, lines.join('\n')).to.equal(0);
      for (const book of setup.books) expect(await verifyLiveBalances(setup.store, book, (line) => lines.push(line)), lines.join('\n')).to.equal(0);
    }

    it('moves credit in one step, both live balances with it, and lists it for both accounts', async () => {
      const from = await account(10n * UNIT);
      const to = await account(0n);
      const result = await setup.books[0].transfer({ fromAccountId: from.accountId, toAccountId: to.accountId, amount: 4n * UNIT + 1n, actor: 'alice', note: 'for the team' });
      expect(result.ok).to.equal(true);
      for (const book of setup.books) {
        expect((await book.balance(from.accountId)).balance).to.equal(6n * UNIT - 1n);
        expect((await book.balance(to.accountId)).balance).to.equal(4n * UNIT + 1n);
      }
      const [listed] = await setup.store.transfers.listTransfers(to.accountId);
      expect(listed).to.include({ id: result.transfer!.id, fromAccountId: from.accountId, toAccountId: to.accountId, amount: 4n * UNIT + 1n, actor: 'alice', note: 'for the team' });
      expect((await setup.store.transfers.listTransfers(from.accountId)).map((transfer) => transfer.id)).to.deep.equal([result.transfer!.id]);
      expect((await setup.store.listCredits(to.accountId)).map((credit) => credit.kind)).to.deep.equal(['transfer']);
      expect(await setup.store.payments.listDebits(from.accountId), 'a transfer is not a payment debit').to.deep.equal([]);
      await ledgerClean();
    });

    it("refuses what the source's holds took, saying what is available, and moves nothing", async () => {
      const from = await account(10n * UNIT);
      const to = await account(0n);
      expect((await hold(setup.books[setup.books.length - 1], from, 7n * UNIT)).ok).to.equal(true);
      const refused = await setup.books[0].transfer({ fromAccountId: from.accountId, toAccountId: to.accountId, amount: 3n * UNIT + 1n, actor: 'alice', note: null });
      expect(refused).to.deep.equal({ ok: false, reason: 'balance', available: 3n * UNIT });
      expect((await setup.books[0].balance(to.accountId)).balance).to.equal(0n);
      expect((await setup.books[0].transfer({ fromAccountId: from.accountId, toAccountId: to.accountId, amount: 3n * UNIT, actor: 'alice', note: null })).ok).to.equal(true);
      // The hold now finds nothing more: the transfer took what it left.
      expect((await hold(setup.books[0], from, 1n)).ok).to.equal(false);
      await ledgerClean();
    });

    it('never overspends the source when holds and transfers race on every instance', async () => {
      const from = await account(100n * UNIT);
      const to = await account(0n);
      const racing = Array.from({ length: 60 }, (_, i) => {
        const book = setup.books[i % setup.books.length];
        return i % 2 === 0
          ? hold(book, from, 3n * UNIT).then((result) => ({ kind: 'hold', ok: result.ok }))
          : book.transfer({ fromAccountId: from.accountId, toAccountId: to.accountId, amount: 3n * UNIT, actor: 'alice', note: null }).then((result) => ({ kind: 'transfer', ok: result.ok }));
      });
      const results = await Promise.all(racing);
      const admitted = results.filter((result) => result.ok);
      expect(admitted, '100 units cover 33 moves of 3').to.have.length(33);
      const moved = BigInt(admitted.filter((result) => result.kind === 'transfer').length) * 3n * UNIT;
      const held = BigInt(admitted.filter((result) => result.kind === 'hold').length) * 3n * UNIT;
      for (const book of setup.books) {
        const source = await book.balance(from.accountId);
        expect(source.balance).to.equal(100n * UNIT - moved);
        expect(source.balance - source.held >= 0n, "never below zero").to.equal(true);
        expect(source.held).to.equal(held);
        expect((await book.balance(to.accountId)).balance).to.equal(moved);
      }
      await ledgerClean();
    });
  });
}
