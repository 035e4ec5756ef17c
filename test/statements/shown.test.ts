/** Amounts as statements show them: the currency and two decimals, rounded half away from zero. */
import { expect } from 'chai';
import { shownAmount } from '../../src/statements/shown';
import { closedMonthsSince, isClosed, parseMonth } from '../../src/statements/month';

describe('statement amounts and months', () => {
  it('shows two decimals with the currency, grouped by thousands', () => {
    expect(shownAmount('1234567.125', 'USD')).to.equal('1,234,567.13 USD');
    expect(shownAmount('0.004999999', 'EUR')).to.equal('0.00 EUR');
    expect(shownAmount('-0.005', 'USD')).to.equal('-0.01 USD');
    expect(shownAmount('-0.001', 'USD')).to.equal('0.00 USD');
    expect(shownAmount('25.0654321', 'USD')).to.equal('25.07 USD');
  });

  it('takes calendar months in UTC, closed an hour after they end', () => {
    const november = parseMonth('2026-11')!;
    expect(november.start.toISOString()).to.equal('2026-11-01T00:00:00.000Z');
    expect(november.end.toISOString()).to.equal('2026-12-01T00:00:00.000Z');
    expect(parseMonth('2026-13')).to.equal(null);
    expect(parseMonth('2026-1')).to.equal(null);
    expect(isClosed(november, new Date('2026-12-01T00:59:59Z'))).to.equal(false);
    expect(isClosed(november, new Date('2026-12-01T01:00:00Z'))).to.equal(true);
    const months = closedMonthsSince(new Date('2025-11-20T10:00:00Z'), new Date('2026-02-01T01:00:00Z')).map((month) => month.month);
    expect(months).to.deep.equal(['2025-11', '2025-12', '2026-01']);
  });
});
