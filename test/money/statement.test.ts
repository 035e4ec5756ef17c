/** A statement's arithmetic: every kind of entry on its line, opening + movements = closing = the ledger. */
import { expect } from 'chai';
import { closingOf, ledgerClosing, statementFigures, StatementMismatchError, type PeriodLedger } from '../../src/money/statement';

const LEDGER: PeriodLedger = {
  before: 7_000_000_001n,
  credits: [
    { kind: 'admin', amount: 2_500_000_000n, entries: 1 },
    { kind: 'dispute_won', amount: 300_000_000n, entries: 1 },
    { kind: 'redemption', amount: 1_000_000_000n, entries: 2 },
    { kind: 'topup', amount: 20_000_000_000n, entries: 2 },
  ],
  debits: [
    { kind: 'adjustment', amount: 1n, entries: 1 },
    { kind: 'dispute', amount: 500_000_000n, entries: 1 },
    { kind: 'refund', amount: 4_000_000_000n, entries: 1 },
  ],
  chargesByModel: [
    { id: 'claude-priced', name: 'claude-priced', requests: 3, amount: 1_234_567_891n },
    { id: 'gpt-priced', name: 'gpt-priced', requests: 2, amount: 9n },
    { id: 'gpt-free', name: 'gpt-free', requests: 1, amount: 0n },
  ],
  chargesByPayer: [
    { id: 'key_a', name: 'ci', requests: 4, amount: 1_234_567_800n },
    { id: 'key_b', name: null, requests: 2, amount: 100n },
  ],
};

describe('statement figures', () => {
  it('puts each kind of credit and debit on its line and closes where the ledger does, to the nano-unit', () => {
    const figures = statementFigures(LEDGER, null);
    expect(figures.opening).to.equal(7_000_000_001n);
    expect(figures.earlier).to.equal(0n);
    expect(figures.movements).to.deep.equal({
      card_payments: 20_000_000_000n,
      redemption_codes: 1_000_000_000n,
      admin_credits: 2_500_000_000n,
      transfers_in: 0n,
      charges: 1_234_567_900n,
      refunds: 4_000_000_000n,
      disputes: 500_000_000n,
      disputes_won: 300_000_000n,
      adjustments: 1n,
      transfers_out: 0n,
    });
    expect(figures.requests).to.equal(6);
    // 7.000000001 + 20 + 1 + 2.5 + 0.3 − 1.2345679 − 4 − 0.5 − 0.000000001
    expect(figures.closing).to.equal(25_065_432_100n);
    expect(figures.closing).to.equal(ledgerClosing(LEDGER));
    expect(closingOf(figures.opening, figures.earlier, figures.movements)).to.equal(figures.closing);
  });

  it('opens at the previous closing and shows what reached the ledger since as earlier entries', () => {
    // The previous statement closed at 7.5; a charge of 0.499999999 dated before this period came later.
    const figures = statementFigures(LEDGER, 7_500_000_000n);
    expect(figures.opening).to.equal(7_500_000_000n);
    expect(figures.earlier).to.equal(-499_999_999n);
    expect(figures.closing).to.equal(ledgerClosing(LEDGER));
  });

  it('an empty month opens and closes at the same balance', () => {
    const empty: PeriodLedger = { before: -3n, credits: [], debits: [], chargesByModel: [], chargesByPayer: [] };
    const figures = statementFigures(empty, -3n);
    expect([figures.opening, figures.earlier, figures.closing, figures.requests]).to.deep.equal([-3n, 0n, -3n, 0]);
  });

  it('refuses a kind of entry with no line, rather than leave it off', () => {
    const unknown = { ...LEDGER, credits: [...LEDGER.credits, { kind: 'gift', amount: 1n, entries: 1 }] };
    expect(() => statementFigures(unknown, null)).to.throw(StatementMismatchError, 'credits of kind "gift" have no statement line');
    const inherited = { ...LEDGER, debits: [{ kind: 'toString', amount: 1n, entries: 1 }] };
    expect(() => statementFigures(inherited, null)).to.throw(StatementMismatchError, 'debits of kind "toString"');
  });

  it('refuses charges whose two groupings disagree', () => {
    const skewed = { ...LEDGER, chargesByPayer: [{ id: 'key_a', name: null, requests: 6, amount: 1n }] };
    expect(() => statementFigures(skewed, null)).to.throw(StatementMismatchError, 'charges by model and by member');
  });
});
