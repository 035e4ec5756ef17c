/** One figure from the button to the ledger: minor units in, exact nano-units out, never a float. */
import { expect } from 'chai';
import { unitsToNano } from '../../src/billing/money';
import { creditForMinor, formatMinor, minorDigits, parseMinor } from '../../src/payments/amounts';

describe('payments: amounts', () => {
  it('knows how many decimals Stripe counts in each currency', () => {
    expect([minorDigits('usd'), minorDigits('eur'), minorDigits('jpy'), minorDigits('krw'), minorDigits('kwd')]).to.deep.equal([2, 2, 0, 0, 3]);
  });

  it('credits minor units at the rate exactly, with a rate that is not an integer', () => {
    expect(creditForMinor(500, 'usd', 1)).to.equal(unitsToNano('5'));
    expect(creditForMinor(1055, 'usd', 1.25)).to.equal(unitsToNano('13.1875'));
    expect(creditForMinor(1, 'usd', 0.333333333)).to.equal(3_333_333n);
    expect(creditForMinor(99_999_999, 'usd', 0.9)).to.equal(unitsToNano('899999.991'));
    expect(creditForMinor(1000, 'jpy', 0.0067)).to.equal(unitsToNano('6.7'));
    // More decimals than nano-units hold after the division: rounded half up, once.
    expect(creditForMinor(1, 'usd', 0.000000005)).to.equal(0n);
    expect(creditForMinor(1, 'usd', 0.00000005)).to.equal(1n);
  });

  it('formats minor units as the customer reads them', () => {
    expect([formatMinor(5, 'usd'), formatMinor(1050, 'usd'), formatMinor(100000, 'usd'), formatMinor(1000, 'jpy'), formatMinor(1234, 'kwd')]).to.deep.equal([
      '0.05',
      '10.50',
      '1000.00',
      '1000',
      '1.234',
    ]);
  });

  it('reads an integer of minor units or a decimal string with at most the currency\'s decimals', () => {
    expect([parseMinor(1050, 'usd'), parseMinor('10.5', 'usd'), parseMinor('10.50', 'usd'), parseMinor('10', 'usd'), parseMinor('1000', 'jpy')]).to.deep.equal([1050, 1050, 1050, 1000, 1000]);
    for (const bad of [0, -5, 10.5, '10.505', '1.5', '', ' ', '1e3', '-1', '0.00', null, {}, Number.MAX_SAFE_INTEGER + 1]) {
      expect(parseMinor(bad, bad === '1.5' ? 'jpy' : 'usd'), JSON.stringify(bad)).to.equal(null);
    }
  });
});
