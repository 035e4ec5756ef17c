/**
 * Card payments through Stripe Checkout: an order is written before Stripe is asked, the webhook (or
 * reconciliation, when a webhook never came) credits it through the store's guarded transaction, at
 * most once whatever arrives and wherever, and refunds and disputes take their share back. Every
 * state change is an audit entry and a metric. The Stripe client is made on first use, for the
 * configuration of the moment (a reload may change the key).
 */
import type { Logger } from 'pino';
import type { Funds } from '../admin/funds';
import { formatUnits } from '../billing/money';
import type { StripeConfig } from '../config/types';
import type { PaymentMetrics, RechargeOutcome } from '../metrics/payment-metrics';
import type { AuditAction, AuditState, NewAuditEntry } from '../store/audit';
import type { EventClaim, PaymentOrder, PaymentProfile, SettledOrder } from '../store/payments';
import type { Account } from '../store/access-store';
import type { AuditStore } from '../store/audit-store';
import type { PaymentsStore } from '../store/payments-store';
import { creditForMinor, formatMinor } from './amounts';
import { openStripe, type CheckoutSession, type PaymentIntent, type StripeClient, type StripeEvent } from './stripe-client';

/** Stripe's own default: a signature older than this is refused (a replayed webhook). */
const SIGNATURE_TOLERANCE_S = 300;
/** The metadata key naming Tollgate's order on every Stripe object made for it. */
const ORDER_METADATA = 'tollgate_order';
/** Set on a checkout whose card the account asked to keep for auto-recharge. */
const SAVE_CARD_METADATA = 'tollgate_save_card';
/** Auto-recharge failures in a row that turn it off until the account turns it on again. */
const RECHARGE_FAILURES_OFF = 3;
/** A webhook event claimed this long ago and never finished: its handler died, the next copy takes it over. */
const EVENT_TAKEOVER_MS = 60_000;
/**
 * How long a copy of an event another handler holds waits for it to finish (then it is a duplicate,
 * or, were that handling to fail, this copy's to handle) before answering 409. Well under Stripe's
 * own wait for an answer; copies racing an ordinary handling (milliseconds) never see a 409.
 */
const IN_FLIGHT_WAIT_MS = 5_000;
const IN_FLIGHT_POLL_MS = 50;

/** Who an audit entry names: the account at the console or API, or Stripe (through its webhook or a lookup). */
type AuditBy = Pick<NewAuditEntry, 'actor' | 'surface' | 'requestId'>;
const STRIPE: AuditBy = { actor: 'stripe', surface: 'server', requestId: null };
const AUTO_RECHARGE: AuditBy = { actor: 'auto-recharge', surface: 'server', requestId: null };

export class StripeUnreachableError extends Error {
  override readonly name = 'StripeUnreachableError';
}

/** The account already has `limit` checkouts waiting for payment (`payments.stripe.max_pending_checkouts`); nothing was made. */
export class PendingCheckoutsError extends Error {
  override readonly name = 'PendingCheckoutsError';
  constructor(readonly limit: number) {
    super(`the account has ${limit} checkouts pending`);
  }
}

export class WebhookSignatureError extends Error {
  override readonly name = 'WebhookSignatureError';
}

/** A signed event Tollgate refuses to act on (an amount that is not one): a 400, nothing moved. */
export class WebhookEventError extends Error {
  override readonly name = 'WebhookEventError';
}

/** Another handler holds this event and has not finished it: a 409, so Stripe sends it again. */
export class WebhookInFlightError extends Error {
  override readonly name = 'WebhookInFlightError';
}

/** What a webhook delivery came to; `ignored` says why an event that was recorded moved nothing. */
export interface WebhookResult {
  readonly event: string;
  readonly duplicate: boolean;
  readonly ignored?: 'currency_mismatch';
}

/** What handling an event concerned: its order, if any, and why it moved nothing when it was set aside. */
interface Handled {
  readonly orderId: string | null;
  readonly ignored?: 'currency_mismatch';
}

export interface PaymentsDeps {
  readonly store: PaymentsStore & AuditStore;
  /** Where a payment's credit or debit reaches the live balances (the gateway's funds, or the CLI's book). */
  readonly funds: Pick<Funds, 'applyStored'>;
  readonly logger: Logger;
  readonly metrics: PaymentMetrics;
  /** The configuration of the moment; undefined when card payments are off. */
  readonly config: () => StripeConfig | undefined;
}

export interface CheckoutResult {
  readonly order: PaymentOrder;
  readonly url: string;
}

export interface ReconcileSummary {
  readonly checked: number;
  readonly credited: number;
  readonly expired: number;
  readonly failed: number;
  readonly pending: number;
  readonly errors: readonly string[];
}

type Outcome = 'credited' | 'expired' | 'failed' | 'pending' | 'unchanged';

/** What an order's event moved on the balance: its credit, less its debit. */
function movedBy(settled: SettledOrder | null): bigint {
  return (settled?.credit?.amount ?? 0n) - (settled?.debit?.amount ?? 0n);
}

/** An amount of an event, in minor units: a safe non-negative integer, or the event is refused. */
function minorAmount(value: unknown, field: string, event: StripeEvent): number {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return value;
  throw new WebhookEventError(`The ${event.type} event ${event.id} has ${field} ${JSON.stringify(value) ?? 'missing'}, not a count of minor units; nothing was moved.`);
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** An id Stripe sent as a string or as the expanded object. */
function idOf(value: string | { id: string } | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  return typeof value === 'string' ? value : value.id;
}

export class Payments {
  private client: { readonly config: StripeConfig; readonly stripe: StripeClient } | null = null;

  constructor(private readonly deps: PaymentsDeps) {}

  /** The configuration, or an error for a caller that should not have got here. */
  settings(): StripeConfig {
    const config = this.deps.config();
    if (config === undefined) throw new Error('card payments are not configured (payments.stripe)');
    return config;
  }

  enabled(): boolean {
    return this.deps.config() !== undefined;
  }

  private stripe(): StripeClient {
    const config = this.settings();
    if (this.client?.config !== config) this.client = { config, stripe: openStripe(config) };
    return this.client.stripe;
  }

  /**
   * Writes a pending order, then asks Stripe for a Checkout Session priced from it (never from the
   * client). Stripe unreachable: the order is marked failed (nothing pending forever) and
   * `StripeUnreachableError` says so.
   */
  async checkout(
    account: Account,
    amountMinor: number,
    options: { returnBase: string; saveCard: boolean; actor: string; surface: 'console' | 'api'; requestId: string | null },
  ): Promise<CheckoutResult> {
    const { returnBase, actor, surface, requestId } = options;
    const config = this.settings();
    const creditAmount = creditForMinor(amountMinor, config.currency, config.units_per_currency_unit);
    const made = await this.deps.store.payments.createCheckoutOrder({ accountId: account.id, currency: config.currency, amountMinor, creditAmount }, config.max_pending_checkouts);
    if ('refused' in made) throw new PendingCheckoutsError(config.max_pending_checkouts);
    const order = made;
    this.deps.metrics.order('created');
    await this.audit('payment.create', order, null, { status: 'pending', amount: formatMinor(amountMinor, config.currency), currency: config.currency, credit: formatUnits(creditAmount) }, { actor, surface, requestId });
    const profile = await this.deps.store.payments.profile(account.id);
    let session: CheckoutSession;
    try {
      session = await this.stripe().checkout.sessions.create(
        {
          mode: 'payment',
          line_items: [
            {
              quantity: 1,
              price_data: { currency: config.currency, unit_amount: amountMinor, product_data: { name: `Balance top-up (${formatUnits(creditAmount)} units)` } },
            },
          ],
          client_reference_id: order.id,
          metadata: { [ORDER_METADATA]: order.id, ...(options.saveCard && { [SAVE_CARD_METADATA]: '1' }) },
          payment_intent_data: {
            metadata: { [ORDER_METADATA]: order.id },
            // The card is kept at Stripe for auto-recharge's off-session charges.
            ...(options.saveCard && { setup_future_usage: 'off_session' as const }),
            ...(config.receipts && account.email !== null && { receipt_email: account.email }),
          },
          ...(profile?.customerId != null ? { customer: profile.customerId } : { customer_creation: 'always' as const }),
          success_url: `${returnBase}/console/payments?order=${order.id}`,
          cancel_url: `${returnBase}/console/topup?cancelled=${order.id}`,
        },
        { idempotencyKey: `tollgate-checkout-${order.id}` },
      );
    } catch (error) {
      const reason = `Stripe could not be reached: ${messageOf(error)}`;
      await this.deps.store.payments.updateOrder(order.id, { status: 'failed', error: reason });
      this.deps.metrics.order('unreachable');
      await this.audit('payment.failed', order, { status: 'pending' }, { status: 'failed', error: reason }, { ...STRIPE, requestId });
      this.deps.logger.warn({ err: error, order: order.id }, 'payments: checkout session not created');
      throw new StripeUnreachableError(reason, { cause: error });
    }
    const updated = (await this.deps.store.payments.updateOrder(order.id, { sessionId: session.id }))!;
    if (session.url === null) throw new Error(`Stripe returned checkout session ${session.id} without a URL`);
    return { order: updated, url: session.url };
  }

  /**
   * Verifies and handles one webhook; a repeated event id is answered without being handled again.
   * Throws WebhookInFlightError while another handler holds the event.
   */
  async webhook(raw: Buffer, signature: string): Promise<WebhookResult> {
    const config = this.settings();
    let event: StripeEvent;
    try {
      event = this.stripe().webhooks.constructEvent(raw, signature, config.webhook_secret, SIGNATURE_TOLERANCE_S);
    } catch (error) {
      throw new WebhookSignatureError(messageOf(error), { cause: error });
    }
    const claim = await this.claim(event);
    if (claim === 'handled') return { event: event.id, duplicate: true };
    if (claim === 'in_flight') {
      throw new WebhookInFlightError(`The event ${event.id} is being handled by another request; send it again later.`);
    }
    let handled: Handled;
    try {
      handled = await this.handle(event);
    } catch (error) {
      // Not handled: the claim goes, so Stripe's retry of this event is handled then.
      await this.deps.store.payments.releaseEvent(event.id).catch((err: unknown) => this.deps.logger.error({ err, event: event.id }, 'payments: releasing a webhook event failed'));
      throw error;
    }
    await this.deps.store.payments.finishEvent(event.id, handled.orderId, new Date());
    return { event: event.id, duplicate: false, ...(handled.ignored !== undefined && { ignored: handled.ignored }) };
  }

  /**
   * Claims the event row: of copies arriving at once anywhere, one gets it. A copy that finds it held
   * waits a little for that handling to end, and takes the event itself when the claim was released
   * (that handling failed) or is older than EVENT_TAKEOVER_MS (its handler died).
   */
  private async claim(event: StripeEvent): Promise<EventClaim> {
    const deadline = Date.now() + IN_FLIGHT_WAIT_MS;
    for (;;) {
      const now = new Date();
      const claim = await this.deps.store.payments.claimEvent(event.id, event.type, now, new Date(now.getTime() - EVENT_TAKEOVER_MS));
      if (claim !== 'in_flight' || Date.now() >= deadline) return claim;
      await new Promise((resolve) => setTimeout(resolve, IN_FLIGHT_POLL_MS));
    }
  }

  /** Handles one verified event; returns the order it concerned, if any. */
  private async handle(event: StripeEvent): Promise<Handled> {
    switch (event.type) {
      case 'checkout.session.completed':
      case 'checkout.session.async_payment_succeeded':
      case 'checkout.session.async_payment_failed':
      case 'checkout.session.expired':
        return { orderId: await this.onSession(event.type, event.data.object) };
      case 'payment_intent.succeeded':
      case 'payment_intent.payment_failed':
        return { orderId: await this.onPaymentIntent(event.type, event.data.object) };
      case 'charge.refunded': {
        const charge = event.data.object;
        const refunded = minorAmount(charge.amount_refunded, 'amount_refunded', event);
        const order = await this.orderOf(charge.metadata, idOf(charge.payment_intent));
        if (order === null) return { orderId: null };
        if (!(await this.sameCurrency(order, charge.currency, event))) return { orderId: order.id, ignored: 'currency_mismatch' };
        await this.refund(order, refunded, `${charge.id}:refunded:${refunded}`);
        return { orderId: order.id };
      }
      case 'charge.dispute.created':
      case 'charge.dispute.closed': {
        const dispute = event.data.object;
        const amount = minorAmount(dispute.amount, 'amount', event);
        const order = await this.orderOf(dispute.metadata, idOf(dispute.payment_intent));
        if (order === null) return { orderId: null };
        if (!(await this.sameCurrency(order, dispute.currency, event))) return { orderId: order.id, ignored: 'currency_mismatch' };
        if (event.type === 'charge.dispute.created') await this.dispute(order, amount, dispute.id, dispute.reason);
        // Lost (or closed otherwise): what the dispute took stays taken.
        else if (dispute.status === 'won') await this.disputeWon(order, amount, dispute.id);
        return { orderId: order.id };
      }
      default:
        // Events the endpoint was not set to send: acknowledged, so Stripe does not retry them.
        return { orderId: null };
    }
  }

  private async onSession(type: string, session: CheckoutSession): Promise<string | null> {
    const orderId = session.client_reference_id ?? session.metadata?.[ORDER_METADATA] ?? null;
    const order = orderId === null ? null : await this.deps.store.payments.findOrder(orderId);
    if (order === null) {
      this.deps.logger.warn({ session: session.id }, 'payments: a checkout session names no order of this gateway; ignored');
      return null;
    }
    await this.applySession(order, session, type);
    return order.id;
  }

  /**
   * Brings an order in line with its session: paid → credited once; `async_payment_failed` → failed;
   * expired → expired; complete but unpaid (a delayed method) → still pending, Stripe's session id and
   * payment intent noted.
   */
  private async applySession(order: PaymentOrder, session: CheckoutSession, type: string): Promise<Outcome> {
    const paymentIntentId = idOf(session.payment_intent);
    if (session.amount_total !== order.amountMinor || session.currency !== order.currency) {
      // Never credit a figure other than the one the order was made for.
      this.deps.logger.error(
        { order: order.id, session: session.id, asked: order.amountMinor, paid: session.amount_total, currency: session.currency },
        'payments: the session\'s amount is not the order\'s; nothing credited',
      );
      return 'unchanged';
    }
    if (session.payment_status === 'paid' && type !== 'checkout.session.async_payment_failed') {
      return (await this.credit(order, paymentIntentId, session.metadata?.[SAVE_CARD_METADATA] === '1')) ? 'credited' : 'unchanged';
    }
    if (type === 'checkout.session.async_payment_failed') return this.markFailed(order, 'The payment did not go through.', paymentIntentId);
    if (type === 'checkout.session.expired' || session.status === 'expired') return this.markExpired(order);
    await this.deps.store.payments.updateOrder(order.id, { sessionId: session.id, ...(paymentIntentId !== null && { paymentIntentId }) });
    return 'pending';
  }

  private async onPaymentIntent(type: string, intent: PaymentIntent): Promise<string | null> {
    const order = await this.orderOf(intent.metadata, intent.id);
    if (order === null) return null;
    if (intent.amount !== order.amountMinor || intent.currency !== order.currency) {
      this.deps.logger.error({ order: order.id, intent: intent.id }, 'payments: the payment intent\'s amount is not the order\'s; nothing credited');
      return order.id;
    }
    if (type === 'payment_intent.succeeded') {
      await this.credit(order, intent.id);
    } else {
      const reason = intent.last_payment_error?.message ?? 'The payment did not go through.';
      if ((await this.markFailed(order, reason, intent.id)) === 'failed' && order.kind === 'auto_recharge') await this.rechargeFailed(order.accountId, reason, false);
    }
    return order.id;
  }

  /**
   * A refund or dispute counts only in its order's currency. Another is refused: logged, audited and
   * recorded as handled with nothing moved, and answered 200. Not a 400: a Stripe event never changes,
   * so every retry would be refused the same way, and Stripe would keep sending it for days and then
   * flag (or turn off) the endpoint. An operator settles it by hand from the log or the audit entry.
   */
  private async sameCurrency(order: PaymentOrder, currency: unknown, event: StripeEvent): Promise<boolean> {
    if (currency === order.currency) return true;
    this.deps.logger.error(
      { order: order.id, account: order.accountId, event: event.id, type: event.type, currency, expected: order.currency },
      "payments: a refund or dispute is not in its order's currency; refused and recorded, nothing moved",
    );
    const action = event.type === 'charge.refunded' ? 'payment.refund' : 'payment.dispute';
    await this.audit(action, order, null, { refused: 'currency_mismatch', event: event.id, type: event.type, currency: String(currency), order_currency: order.currency }, STRIPE);
    return false;
  }

  private async orderOf(metadata: Record<string, string> | null | undefined, paymentIntentId: string | null): Promise<PaymentOrder | null> {
    const orderId = metadata?.[ORDER_METADATA];
    if (orderId !== undefined) {
      const order = await this.deps.store.payments.findOrder(orderId);
      if (order !== null) return order;
    }
    if (paymentIntentId === null) return null;
    const known = await this.deps.store.payments.findOrderByPaymentIntent(paymentIntentId);
    if (known !== null) return known;
    // A dispute (or a refund) that comes before the session's webhook: only Stripe's payment intent
    // names the order yet. Unreachable, the event fails and Stripe sends it again.
    const intent = await this.stripe().paymentIntents.retrieve(paymentIntentId);
    const named = intent.metadata?.[ORDER_METADATA];
    return named === undefined ? null : this.deps.store.payments.findOrder(named);
  }

  /** Credits the order once, through the live book; true when this call did. */
  private async credit(order: PaymentOrder, paymentIntentId: string | null, saveCard = false): Promise<boolean> {
    const paid = paymentIntentId === null ? null : await this.paymentOf(paymentIntentId);
    const receiptUrl = paid?.receiptUrl ?? null;
    const result = await this.deps.funds.applyStored(
      order.accountId,
      () => this.deps.store.payments.creditOrder(order.id, { ...(paymentIntentId !== null && { paymentIntentId }), ...(receiptUrl !== null && { receiptUrl }) }),
      movedBy,
    );
    if (result === null || !result.paidIn) return false;
    if (saveCard && paid?.customerId != null && paid.paymentMethodId !== null) {
      await this.deps.store.payments.saveProfile(order.accountId, { customerId: paid.customerId, paymentMethodId: paid.paymentMethodId });
    }
    if (order.kind === 'auto_recharge') {
      await this.deps.store.payments.saveProfile(order.accountId, { failures: 0, lastError: null, needsAction: false });
      this.deps.metrics.recharge('paid');
    }
    // Refunds or disputes that came first took their part already: the credit is what is left (maybe none).
    const amount = result.credit?.amount ?? 0n;
    this.deps.metrics.order('paid');
    if (amount > 0n) this.deps.metrics.credit(amount);
    this.deps.logger.info({ order: order.id, account: order.accountId, credit: result.credit?.id ?? null, amount: formatUnits(amount) }, 'payments: order paid and credited');
    await this.audit('payment.paid', order, { status: order.status }, { status: 'paid', credit_id: result.credit?.id ?? null, amount: formatUnits(amount), payment_intent: paymentIntentId }, STRIPE);
    return true;
  }

  /**
   * The receipt's address (from the payment's charge), the card and the customer; null when Stripe
   * cannot say now, which never blocks a credit.
   */
  private async paymentOf(paymentIntentId: string): Promise<{ receiptUrl: string | null; paymentMethodId: string | null; customerId: string | null } | null> {
    try {
      const intent = await this.stripe().paymentIntents.retrieve(paymentIntentId, { expand: ['latest_charge'] });
      const charge = intent.latest_charge;
      return {
        receiptUrl: charge !== null && typeof charge === 'object' ? (charge.receipt_url ?? null) : null,
        paymentMethodId: idOf(intent.payment_method),
        customerId: idOf(intent.customer),
      };
    } catch (error) {
      this.deps.logger.warn({ err: error, paymentIntentId }, 'payments: the receipt could not be read from Stripe');
      return null;
    }
  }

  private async markFailed(order: PaymentOrder, reason: string, paymentIntentId: string | null): Promise<Outcome> {
    if (order.status === 'paid' || order.status === 'failed') return 'unchanged';
    await this.deps.store.payments.updateOrder(order.id, { status: 'failed', error: reason, ...(paymentIntentId !== null && { paymentIntentId }) });
    this.deps.metrics.order('failed');
    await this.audit('payment.failed', order, { status: order.status }, { status: 'failed', error: reason }, STRIPE);
    return 'failed';
  }

  private async markExpired(order: PaymentOrder): Promise<Outcome> {
    if (order.status === 'paid' || order.status === 'expired') return 'unchanged';
    await this.deps.store.payments.updateOrder(order.id, { status: 'expired' });
    this.deps.metrics.order('expired');
    await this.audit('payment.expired', order, { status: order.status }, { status: 'expired' }, STRIPE);
    return 'expired';
  }

  private async refund(order: PaymentOrder, refundedMinor: number, source: string): Promise<void> {
    const result = await this.deps.funds.applyStored(order.accountId, () => this.deps.store.payments.refundOrder(order.id, refundedMinor, source), movedBy);
    if (result?.debit == null) return;
    this.deps.metrics.order('refunded');
    this.deps.metrics.debit('refund', result.debit.amount);
    await this.audit('payment.refund', order, { refunded: formatMinor(order.refundedMinor, order.currency) }, { refunded: formatMinor(refundedMinor, order.currency), debit_id: result.debit.id, amount: formatUnits(result.debit.amount) }, STRIPE);
  }

  private async dispute(order: PaymentOrder, disputedMinor: number, disputeId: string, reason: string): Promise<void> {
    const result = await this.deps.funds.applyStored(order.accountId, () => this.deps.store.payments.disputeOrder(order.id, disputedMinor, disputeId, reason), movedBy);
    if (result === null) return;
    this.deps.metrics.order('disputed');
    if (result.debit !== null) this.deps.metrics.debit('dispute', result.debit.amount);
    this.deps.logger.warn({ order: order.id, account: order.accountId, reason }, 'payments: a payment is disputed; the account is flagged');
    await this.audit('payment.dispute', order, { disputed: order.disputed }, { disputed: true, reason, debit_id: result.debit?.id ?? null, amount: result.debit === null ? '0' : formatUnits(result.debit.amount) }, STRIPE);
  }

  /** A dispute closed in the merchant's favour: what the order no longer owes it comes back, as a credit of its own kind. */
  private async disputeWon(order: PaymentOrder, disputedMinor: number, disputeId: string): Promise<void> {
    const result = await this.deps.funds.applyStored(order.accountId, () => this.deps.store.payments.disputeWon(order.id, disputedMinor, disputeId), movedBy);
    if (result?.credit == null) return;
    this.deps.metrics.credit(result.credit.amount);
    this.deps.logger.info({ order: order.id, account: order.accountId, dispute: disputeId, amount: formatUnits(result.credit.amount) }, 'payments: a dispute was won; its funds are given back');
    await this.audit('payment.dispute', order, { disputed: true }, { dispute: disputeId, won: true, credit_id: result.credit.id, amount: formatUnits(result.credit.amount) }, STRIPE);
  }

  /**
   * One auto-recharge for an account whose balance fell under its threshold: an order made only when
   * none is in flight and the month's cap allows it (checked with the write, so concurrent settles on
   * any instance make one), then an off-session PaymentIntent on the saved card, keyed by the order so
   * a retried call charges once. Credited through the same path as a webhook.
   */
  async recharge(profile: PaymentProfile, now = new Date()): Promise<RechargeOutcome | 'in_flight'> {
    const config = this.settings();
    if (!profile.autoRecharge || profile.customerId === null || profile.paymentMethodId === null || profile.rechargeMinor <= 0) return 'failed';
    // A disputed payment flags the account: its card is not charged again while the flag stands.
    if (profile.flaggedAt !== null) {
      this.deps.metrics.recharge('flagged');
      return 'flagged';
    }
    const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    const creditAmount = creditForMinor(profile.rechargeMinor, config.currency, config.units_per_currency_unit);
    const made = await this.deps.store.payments.createRechargeOrder(
      { accountId: profile.accountId, currency: config.currency, amountMinor: profile.rechargeMinor, creditAmount },
      monthStart,
      // The operator's limit holds over a cap saved before it was lowered.
      Math.min(profile.monthlyCapMinor, config.auto_recharge.max_monthly_cap),
    );
    if ('refused' in made) {
      if (made.refused === 'in_flight') return 'in_flight';
      this.deps.metrics.recharge('capped');
      return 'capped';
    }
    const order = made;
    this.deps.metrics.order('created');
    this.deps.metrics.recharge('started');
    await this.audit('payment.create', order, null, { status: 'pending', kind: 'auto_recharge', amount: formatMinor(order.amountMinor, order.currency), credit: formatUnits(creditAmount) }, AUTO_RECHARGE);
    let intent: PaymentIntent;
    try {
      intent = await this.stripe().paymentIntents.create(
        {
          amount: order.amountMinor,
          currency: order.currency,
          customer: profile.customerId,
          payment_method: profile.paymentMethodId,
          off_session: true,
          confirm: true,
          metadata: { [ORDER_METADATA]: order.id },
        },
        { idempotencyKey: `tollgate-recharge-${order.id}` },
      );
    } catch (error) {
      const failed = error as { code?: string; message?: string; payment_intent?: { id: string } };
      const needsAction = failed.code === 'authentication_required';
      const reason = needsAction ? 'The card needs its holder to confirm this payment: top up once by hand to authenticate it.' : (failed.message ?? 'The payment did not go through.');
      await this.markFailed(order, reason, failed.payment_intent?.id ?? null);
      await this.rechargeFailed(order.accountId, reason, needsAction);
      return needsAction ? 'needs_action' : 'failed';
    }
    await this.deps.store.payments.updateOrder(order.id, { paymentIntentId: intent.id });
    if (intent.status === 'succeeded') return (await this.credit({ ...order, paymentIntentId: intent.id }, intent.id)) ? 'paid' : 'started';
    if (intent.status === 'requires_action') {
      const reason = 'The card needs its holder to confirm this payment: top up once by hand to authenticate it.';
      await this.markFailed(order, reason, intent.id);
      await this.rechargeFailed(order.accountId, reason, true);
      return 'needs_action';
    }
    // Processing: the webhook (or reconciliation) settles it.
    return 'started';
  }

  /** One more failure in a row; the third turns auto-recharge off until the account turns it on again. */
  private async rechargeFailed(accountId: string, reason: string, needsAction: boolean): Promise<void> {
    const profile = await this.deps.store.payments.profile(accountId);
    const failures = (profile?.failures ?? 0) + 1;
    const off = failures >= RECHARGE_FAILURES_OFF;
    await this.deps.store.payments.saveProfile(accountId, { failures, lastError: reason, needsAction, ...(off && { autoRecharge: false }) });
    this.deps.metrics.recharge(needsAction ? 'needs_action' : 'failed');
    this.deps.logger.warn({ account: accountId, failures, reason }, 'payments: an auto-recharge failed');
    if (!off) return;
    this.deps.metrics.recharge('turned_off');
    try {
      await this.deps.store.appendAudit({ action: 'payment.settings', ...AUTO_RECHARGE, target: accountId, accountId, before: { auto_recharge: true }, after: { auto_recharge: false, failures, reason } });
    } catch (err) {
      this.deps.logger.error({ err, account: accountId }, 'audit: appending a payment entry failed');
    }
  }

  /**
   * Looks one pending order up in Stripe and settles it as Stripe says. `expire`: an order Stripe still
   * has open is expired there and here (the background job's old orders); without it, it stays pending.
   */
  async reconcileOrder(order: PaymentOrder, expire: boolean): Promise<Outcome> {
    if (order.status === 'paid') return 'unchanged';
    const stripe = this.stripe();
    if (order.sessionId !== null) {
      let session = await stripe.checkout.sessions.retrieve(order.sessionId);
      if (session.status === 'open' && expire) session = await stripe.checkout.sessions.expire(order.sessionId);
      return this.applySession(order, session, session.status === 'expired' ? 'checkout.session.expired' : 'checkout.session.completed');
    }
    if (order.paymentIntentId !== null) {
      const intent = await stripe.paymentIntents.retrieve(order.paymentIntentId);
      if (intent.status === 'succeeded') return (await this.credit(order, intent.id)) ? 'credited' : 'unchanged';
      if (intent.status === 'canceled' || intent.status === 'requires_payment_method') return this.markFailed(order, intent.last_payment_error?.message ?? 'The payment did not go through.', intent.id);
      return 'pending';
    }
    // Never reached Stripe (the instance stopped between writing the order and asking Stripe).
    return expire ? this.markFailed(order, 'The payment was never started with Stripe.', null) : 'pending';
  }

  /**
   * Every pending order (made before `before`, when given) looked up in Stripe. `expire`: sessions still
   * open are expired. A failure to reach Stripe for one order is reported and leaves it pending.
   */
  async reconcile(options: { before?: Date; expire: boolean }): Promise<ReconcileSummary> {
    const pending = await this.deps.store.payments.listOrders({ status: 'pending', ...(options.before !== undefined && { createdBefore: options.before }), limit: 1000 });
    const counts = { credited: 0, expired: 0, failed: 0, pending: 0 };
    const errors: string[] = [];
    for (const order of pending) {
      try {
        const outcome = await this.reconcileOrder(order, options.expire);
        if (outcome !== 'unchanged') counts[outcome] += 1;
      } catch (error) {
        errors.push(`${order.id}: ${messageOf(error)}`);
      }
    }
    return { checked: pending.length, ...counts, errors };
  }

  private async audit(action: AuditAction, order: PaymentOrder, before: AuditState | null, after: AuditState, by: AuditBy): Promise<void> {
    try {
      await this.deps.store.appendAudit({ action, ...by, target: order.id, accountId: order.accountId, before, after });
    } catch (err) {
      this.deps.logger.error({ err, order: order.id, action }, 'audit: appending a payment entry failed');
    }
  }
}
