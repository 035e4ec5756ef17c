/**
 * The card-order rule alone: every arrival order of one order's events (paid, refunds, disputes opened
 * and won, repeats) ends at the same balance, the one the merged facts owe; and the figures of the
 * leaks it closes (a refund or dispute before the payment, a refund after a dispute, a won dispute).
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { afterMove, booked, NO_BOOKS, owed, settle, signedAmount, type OrderBooks, type OrderEvent, type OrderFacts } from '../../src/money/card-orders';

const TEN: OrderFacts = { amountMinor: 1000, creditAmount: 12_500_000_000n, paid: false, refundedMinor: 0, disputes: [] };

/** Applies the events one after another as a store would; returns the balance moved and the books. */
function run(start: OrderFacts, events: readonly OrderEvent[]): { balance: bigint; books: OrderBooks; facts: OrderFacts } {
  let facts = start;
  let books = NO_BOOKS;
  let balance = 0n;
  for (const event of events) {
    const settlement = settle(facts, books, event);
    if (settlement.move !== null) expect(settlement.move.amount > 0n).to.equal(true);
    facts = settlement.facts;
    books = afterMove(books, settlement);
    balance += signedAmount(settlement.move);
  }
  return { balance, books, facts };
}

const paid: OrderEvent = { type: 'paid' };
const refund = (refundedMinor: number): OrderEvent => ({ type: 'refunded', refundedMinor });
const dispute = (id: string, amountMinor: number): OrderEvent => ({ type: 'disputed', disputeId: id, amountMinor });
const won = (id: string, amountMinor: number): OrderEvent => ({ type: 'dispute_won', disputeId: id, amountMinor });

describe('card orders: the credit, refund and dispute rule', () => {
  it('a full refund before the payment leaves nothing credited', () => {
    expect(run(TEN, [refund(1000), paid]).balance).to.equal(0n);
    expect(run(TEN, [refund(400), paid]).balance).to.equal(7_500_000_000n);
  });

  it('a dispute before the payment lowers the credit, and the credit is still marked paid in', () => {
    const { balance, books } = run(TEN, [dispute('dp_1', 1000), paid]);
    expect(balance).to.equal(0n);
    expect(books.credited).to.equal(0n);
  });

  it('a refund after a dispute of one order takes only what is left', () => {
    expect(run(TEN, [paid, dispute('dp_1', 1000), refund(1000)]).balance).to.equal(0n);
    const partial = run(TEN, [paid, dispute('dp_1', 600), refund(500)]);
    expect(partial.balance).to.equal(0n);
    expect(partial.books).to.deep.equal({ credited: TEN.creditAmount, refunded: 5_000_000_000n, disputed: 7_500_000_000n, reinstated: 0n });
  });

  it('a won dispute gives back what it took, as a dispute_won credit', () => {
    const settlement = settle(run(TEN, [paid, dispute('dp_1', 1000)]).facts, run(TEN, [paid, dispute('dp_1', 1000)]).books, won('dp_1', 1000));
    expect(settlement.move).to.deep.equal({ kind: 'dispute_won', amount: TEN.creditAmount });
    expect(run(TEN, [paid, dispute('dp_1', 1000), won('dp_1', 1000)]).balance).to.equal(TEN.creditAmount);
    // Won before it was known to be opened: the late "opened" does not reopen it.
    expect(run(TEN, [paid, won('dp_1', 1000), dispute('dp_1', 1000)]).balance).to.equal(TEN.creditAmount);
  });

  it('a won dispute gives back nothing a refund has taken since', () => {
    expect(run(TEN, [paid, dispute('dp_1', 600), refund(500), won('dp_1', 600)]).balance).to.equal(6_250_000_000n);
  });

  it('every arrival order of the same events, with repeats, ends at the balance the facts owe', () => {
    const event = fc.oneof(
      fc.constant(paid),
      fc.integer({ min: 0, max: 1200 }).map(refund),
      fc.tuple(fc.constantFrom('dp_a', 'dp_b'), fc.integer({ min: 1, max: 1000 })).chain(([id, amount]) => fc.constantFrom(dispute(id, amount), won(id, amount))),
    );
    const order = fc.record({ amountMinor: fc.integer({ min: 1, max: 100_000 }), creditAmount: fc.bigInt({ min: 1n, max: 10n ** 15n }) });
    fc.assert(
      fc.property(order, fc.array(event, { maxLength: 8 }), fc.array(fc.nat(), { minLength: 8, maxLength: 8 }), (shape, events, keys) => {
        const start: OrderFacts = { ...TEN, ...shape };
        // The same events in another order, some delivered twice.
        const shuffled = events.map((e, i) => ({ e, k: keys[i % keys.length] * 31 + i })).sort((a, b) => a.k - b.k).map(({ e }) => e);
        const repeated = [...shuffled, ...shuffled.filter((_, i) => i % 2 === 0)];
        const first = run(start, events);
        const second = run(start, repeated);
        expect(second.balance).to.equal(first.balance);
        expect(first.balance).to.equal(owed(first.facts));
        expect(booked(first.books)).to.equal(first.balance);
        expect(first.balance >= 0n && first.balance <= start.creditAmount).to.equal(true);
      }),
      { numRuns: 500 },
    );
  });

  it('every permutation of paid, a refund, a dispute and its win ends at one balance', () => {
    const events = [paid, refund(300), dispute('dp_1', 1000), won('dp_1', 1000)];
    const permutations = (list: OrderEvent[]): OrderEvent[][] =>
      list.length <= 1 ? [list] : list.flatMap((item, i) => permutations([...list.slice(0, i), ...list.slice(i + 1)]).map((rest) => [item, ...rest]));
    const balances = new Set(permutations(events).map((order) => run(TEN, order).balance));
    expect([...balances]).to.deep.equal([8_750_000_000n]);
  });
});
