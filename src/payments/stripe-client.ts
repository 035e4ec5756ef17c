/**
 * The official Stripe library, loaded the first time a configuration with `payments.stripe` needs it,
 * so a gateway without card payments never pays its memory or start-up time. Pointed at `api_base`
 * through the library's own host, port and protocol options.
 */
import type StripeModule from 'stripe';
import type { StripeConfig } from '../config/types';

export type StripeClient = StripeModule.Stripe;
export type StripeEvent = StripeModule.Event;
export type CheckoutSession = StripeModule.Checkout.Session;
export type PaymentIntent = StripeModule.PaymentIntent;

/** A client for `config`: its key, its API base, one retry (Stripe's idempotency keys make it safe). */
export function openStripe(config: StripeConfig): StripeClient {
  const Stripe = require('stripe') as typeof StripeModule;
  const base = new URL(config.api_base);
  const protocol = base.protocol === 'http:' ? 'http' : 'https';
  return new Stripe(config.secret_key, {
    protocol,
    host: base.hostname,
    port: base.port === '' ? (protocol === 'http' ? 80 : 443) : Number(base.port),
    timeout: config.timeout_ms,
    maxNetworkRetries: 1,
    telemetry: false,
    appInfo: { name: 'Tollgate' },
  });
}
