/**
 * The currency balances and prices are kept in, for people to read them in: `plugins.billing.currency`
 * when set, else the currency card payments are taken in (`payments.stripe.currency`), else usd.
 * Amounts themselves stay unit-less decimals in the ledger, the API and CSV; only their display
 * names the currency.
 */
import type { GatewayConfig } from '../config/types';

const DEFAULT_CURRENCY = 'usd';

export function balanceCurrency(config: Pick<GatewayConfig, 'plugins' | 'payments'>): string {
  const configured = config.plugins.billing.currency;
  if (configured !== '') return configured;
  return config.payments.stripe?.currency ?? DEFAULT_CURRENCY;
}
