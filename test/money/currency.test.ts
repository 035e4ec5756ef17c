import { expect } from 'chai';
import type { GatewayConfig } from '../../src/config/types';
import { balanceCurrency } from '../../src/money/currency';

type CurrencySettings = Pick<GatewayConfig, 'plugins' | 'payments'>;

/** Just the two settings the rule reads. */
function settings(billingCurrency: string, stripeCurrency?: string): CurrencySettings {
  return {
    plugins: { billing: { currency: billingCurrency } },
    payments: stripeCurrency === undefined ? {} : { stripe: { currency: stripeCurrency } },
  } as unknown as CurrencySettings;
}

describe('balanceCurrency', () => {
  it('is plugins.billing.currency when set, whatever card payments are taken in', () => {
    expect(balanceCurrency(settings('eur'))).to.equal('eur');
    expect(balanceCurrency(settings('eur', 'usd'))).to.equal('eur');
  });

  it('is the card payments currency when billing names none', () => {
    expect(balanceCurrency(settings('', 'gbp'))).to.equal('gbp');
  });

  it('is usd when neither names one', () => {
    expect(balanceCurrency(settings(''))).to.equal('usd');
  });
});
