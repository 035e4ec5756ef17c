/**
 * What every book of the simulator shares: one gateway.yaml (a priced chat model with two routes, the
 * first stating what it costs the operator and the second, its failover, of unknown cost; card
 * payments in cents at one balance unit per dollar, so every share of an order is exact), the
 * gateway's own hold estimate, pricing and upstream cost for a request, and Stripe's webhooks as
 * Stripe signs them.
 */
import Stripe from 'stripe';
import { dearestHold } from '../../src/billing/hold-amount';
import { costOf } from '../../src/billing/prices';
import { costTable, rateTable, routeKey } from '../../src/billing/service-levels';
import { chatFramingTokens } from '../../src/billing/chat-framing';
import { parseConfig } from '../../src/config/load';
import type { GatewayConfig, ModelConfig, StripeConfig } from '../../src/config/types';
import { requestReach } from '../../src/protocols/request-reach';
import { NO_TOKENS } from '../../src/protocols/types';
import { encoderCount } from '../helpers/o200k';
import type { Op } from './ops';

const WEBHOOK_SECRET = 'whsec_sim';
export const MODEL = 'sim-chat';

export const CONFIG: GatewayConfig = parseConfig(
  `
version: 1
providers:
  openai: { protocol: openai, base_url: http://127.0.0.1:9/v1, api_key: k }
  spare: { protocol: openai, base_url: http://127.0.0.1:9/v1, api_key: k }
models:
  ${MODEL}:
    family: openai
    routes: [{ provider: openai, cost: { input: 1.3, output: 5.7 } }, { provider: spare, priority: 1 }]
    max_output_tokens: 200
    context_window: 128000
    price: { input: 2, output: 8 }
payments:
  stripe:
    secret_key: sk_test_sim
    webhook_secret: ${WEBHOOK_SECRET}
    currency: usd
    min_amount: 25
    max_amount: 100000
    units_per_currency_unit: 1
    reconcile_interval_seconds: 0
`,
  'sim.yaml',
  {},
);

export const STRIPE_CONFIG: StripeConfig = CONFIG.payments.stripe!;
const model: ModelConfig = CONFIG.models[MODEL];
const rates = rateTable(CONFIG).get(MODEL)!;
const routeCosts = costTable(CONFIG).get(MODEL)!;
/** The providers of the model's routes, in the order `Op.route` names them. */
const ROUTES = model.routes.map((route) => route.provider);

/**
 * A request as the gateway sees it: its hold (the gateway's own estimate), what its usage is charged,
 * and what it cost upstream at the route that answered (null: that route's cost is unknown).
 */
export interface Priced {
  readonly hold: bigint;
  readonly cost: bigint;
  readonly honest: boolean;
  readonly provider: string;
  readonly upstreamCost: bigint | null;
}

const counted = new Map<string, number>();

export function priced(op: Extract<Op, { kind: 'request' }>): Priced {
  const body = { model: MODEL, messages: [{ role: 'user', content: op.text }], max_tokens: op.maxTokens };
  const raw = Buffer.from(JSON.stringify(body));
  const reach = requestReach('chat', body, raw);
  const hold = dearestHold({ rawBytes: raw.length, reach, referencedTokens: 0, defaultToolUses: 0 }, model, rates, [null]).amount;
  let input = counted.get(op.text);
  if (input === undefined) counted.set(op.text, (input = encoderCount(op.text) + chatFramingTokens(body)));
  const output = Math.floor((op.maxTokens * op.outputPercent) / 100);
  const usage = {
    honest: { inputTokens: input, outputTokens: output },
    // More than the request could use: the upstream's figure is charged all the same.
    over: { inputTokens: input * 3 + 50, outputTokens: op.maxTokens * 2 + 10 },
    none: { inputTokens: 0, outputTokens: 0 },
  }[op.usage];
  const cost = costOf({ ...NO_TOKENS, ...usage, toolCalls: {} }, rates.standard.card);
  const provider = ROUTES[op.route];
  const routeRates = routeCosts.get(routeKey(provider, MODEL));
  const upstreamCost = routeRates === undefined ? null : costOf({ ...NO_TOKENS, ...usage, toolCalls: {} }, routeRates.standard.card);
  return { hold, cost, honest: op.usage !== 'over', provider, upstreamCost };
}

/** The nano-units an order of `minor` cents credits: a unit per dollar. */
export function orderCredit(minor: number): bigint {
  return BigInt(minor) * 10_000_000n;
}

const stripe = new Stripe('sk_test_sim');

/** One Stripe event about `orderId`, as its webhook would deliver it: the raw body and its signature. */
export function webhook(op: Extract<Op, { kind: 'stripe' }>, orderId: string, orderMinor: number): { raw: Buffer; signature: string } {
  const metadata = { tollgate_order: orderId };
  const dispute = { id: `dp_${orderId}`, object: 'dispute', amount: op.minor, currency: 'usd', charge: `ch_${orderId}`, payment_intent: null, reason: 'fraudulent', metadata };
  const [type, object] = {
    paid: [
      'checkout.session.completed',
      { id: `cs_${orderId}`, object: 'checkout.session', client_reference_id: orderId, metadata, amount_total: orderMinor, currency: 'usd', payment_status: 'paid', status: 'complete', payment_intent: null },
    ],
    refund: ['charge.refunded', { id: `ch_${orderId}`, object: 'charge', amount: orderMinor, amount_refunded: op.minor, currency: 'usd', refunded: op.minor === orderMinor, metadata, payment_intent: null }],
    dispute: ['charge.dispute.created', { ...dispute, status: 'needs_response' }],
    dispute_won: ['charge.dispute.closed', { ...dispute, status: 'won' }],
  }[op.event] as [string, object];
  const event = { id: op.eventId, object: 'event', api_version: Stripe.API_VERSION, created: Math.floor(Date.now() / 1000), type, livemode: false, pending_webhooks: 1, data: { object } };
  const payload = JSON.stringify(event);
  return { raw: Buffer.from(payload), signature: stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }) };
}
