/**
 * Card payments: what Top Up offers, a checkout for the signed-in account, its payment history, the
 * Stripe webhook (signed by Stripe, no session), and the administrators' view with reconciliation.
 * Every amount a client sends is validated here and priced on the server; the figure shown, the
 * figure asked of Stripe and the figure credited are one (amounts.ts).
 */
import type Router from '@koa/router';
import { formatUnits, unitsToNano } from '../../billing/money';
import { readRawBody } from '../../kernel/body';
import { GatewayError } from '../../kernel/errors';
import { creditForMinor, formatMinor, parseMinor } from '../../payments/amounts';
import { PendingCheckoutsError, StripeUnreachableError, WebhookEventError, WebhookInFlightError, WebhookSignatureError } from '../../payments/payments';
import { returnBase } from '../../payments/return-base';
import type { OrderStatus, PaymentOrder, PaymentProfile } from '../../store/payments';
import { debitView } from '../views';
import { audit } from '../audit';
import { amount } from '../fields';
import { ApiError, invalid } from '../api-error';
import { adminOnly, signedIn } from '../authenticate';
import { callerOf, type AdminDeps, type ApiState } from '../context';
import { readJsonObject } from '../json-body';
import { requirePasswordOrCode } from '../password-or-code';
import { limitParam, single } from './query';

/** Stripe's event payloads are a few KiB; a Checkout Session with its line items stays well under this. */
const MAX_WEBHOOK_BYTES = 512 * 1024;
const ORDER_STATUSES: readonly OrderStatus[] = ['pending', 'paid', 'failed', 'expired'];

function orderView(order: PaymentOrder) {
  return {
    id: order.id,
    account_id: order.accountId,
    kind: order.kind,
    status: order.status,
    currency: order.currency,
    amount_minor: order.amountMinor,
    amount: formatMinor(order.amountMinor, order.currency),
    credit: formatUnits(order.creditAmount),
    refunded: formatMinor(order.refundedMinor, order.currency),
    disputed: order.disputed,
    receipt_url: order.receiptUrl,
    error: order.error,
    created_at: order.createdAt.toISOString(),
    updated_at: order.updatedAt.toISOString(),
  };
}



function rechargeView(profile: PaymentProfile | null, currency: string) {
  return {
    enabled: profile?.autoRecharge ?? false,
    threshold: formatUnits(profile?.threshold ?? 0n),
    amount_minor: profile?.rechargeMinor ?? 0,
    amount: formatMinor(profile?.rechargeMinor ?? 0, currency),
    monthly_cap_minor: profile?.monthlyCapMinor ?? 0,
    monthly_cap: formatMinor(profile?.monthlyCapMinor ?? 0, currency),
    card_saved: profile?.paymentMethodId != null,
    failures: profile?.failures ?? 0,
    last_error: profile?.lastError ?? null,
    needs_action: profile?.needsAction ?? false,
    flagged: profile?.flaggedAt != null,
  };
}

/** The settings an audit entry keeps (never the card's or the customer's Stripe id). */
function rechargeAudit(view: ReturnType<typeof rechargeView>) {
  return { enabled: view.enabled, threshold: view.threshold, amount: view.amount, monthly_cap: view.monthly_cap };
}


function stripeConfig(deps: AdminDeps) {
  const config = deps.runtime.current.config.payments.stripe;
  if (config === undefined) throw new ApiError('not_found', 'Card payments are not set up on this gateway (payments.stripe); top up with a redemption code.');
  return config;
}

export function paymentRoutes(router: Router<ApiState>, deps: AdminDeps): void {
  const admin = [signedIn(deps), adminOnly] as const;

  router.get('/payments/options', signedIn(deps), async (ctx) => {
    const config = deps.runtime.current.config.payments.stripe;
    if (config === undefined) {
      ctx.body = { enabled: false };
      return;
    }
    const option = (minor: number) => ({ amount_minor: minor, amount: formatMinor(minor, config.currency), credit: formatUnits(creditForMinor(minor, config.currency, config.units_per_currency_unit)) });
    ctx.body = {
      enabled: true,
      currency: config.currency,
      min: option(config.min_amount),
      max: option(config.max_amount),
      presets: config.presets.map(option),
      units_per_currency_unit: String(config.units_per_currency_unit),
    };
  });

  router.post('/payments/checkout', signedIn(deps), async (ctx) => {
    const config = stripeConfig(deps);
    const { account, via } = callerOf(ctx);
    const body = await readJsonObject(ctx);
    const amountMinor = parseMinor(body.amount, config.currency);
    const range = `${formatMinor(config.min_amount, config.currency)} to ${formatMinor(config.max_amount, config.currency)} ${config.currency.toUpperCase()}`;
    if (amountMinor === null) throw invalid('amount', `The amount is in minor units of ${config.currency.toUpperCase()} (an integer, 1050 for 10.50) or a decimal string ("10.50"), from ${range}.`);
    if (amountMinor < config.min_amount || amountMinor > config.max_amount) throw invalid('amount', `The amount must be from ${range}.`);
    try {
      const { order, url } = await deps.payments.checkout(account, amountMinor, {
        returnBase: returnBase(deps.runtime.current.config.server, ctx.req.socket.localPort ?? deps.runtime.current.config.server.port),
        saveCard: body.save_card === true,
        actor: account.name,
        surface: via === 'token' ? 'api' : 'console',
        requestId: ctx.state.requestId,
      });
      ctx.status = 201;
      ctx.body = { order_id: order.id, url, order: orderView(order) };
    } catch (error) {
      if (error instanceof StripeUnreachableError) throw new ApiError('unavailable', 'The payment provider (Stripe) could not be reached; nothing was charged. Try again in a moment.');
      if (error instanceof PendingCheckoutsError) {
        throw new ApiError(
          'conflict',
          `This account already has ${error.limit} checkouts waiting for payment (payments.stripe.max_pending_checkouts): finish one, or wait for an abandoned one to expire, before starting another.`,
        );
      }
      throw error;
    }
  });

  router.get('/payments', signedIn(deps), async (ctx) => {
    const { account } = callerOf(ctx);
    const [orders, debits, profile] = await Promise.all([
      deps.store.payments.listOrders({ accountId: account.id, limit: limitParam(ctx.query.limit, 100, 1000) }),
      deps.store.payments.listDebits(account.id),
      deps.store.payments.profile(account.id),
    ]);
    ctx.body = { payments: orders.map(orderView), debits: debits.map(debitView), flagged: profile?.flaggedAt != null };
  });

  router.get('/payments/auto-recharge', signedIn(deps), async (ctx) => {
    const config = stripeConfig(deps);
    ctx.body = { auto_recharge: rechargeView(await deps.store.payments.profile(callerOf(ctx).account.id), config.currency) };
  });

  router.put('/payments/auto-recharge', signedIn(deps), async (ctx) => {
    const config = stripeConfig(deps);
    const { account, via } = callerOf(ctx);
    const body = await readJsonObject(ctx);
    if (typeof body.enabled !== 'boolean') throw invalid('enabled', 'enabled is true or false.');
    const before = await deps.store.payments.profile(account.id);
    let saved;
    if (!body.enabled) {
      saved = await deps.store.payments.saveProfile(account.id, { autoRecharge: false });
    } else {
      if (before?.paymentMethodId == null) {
        throw new ApiError('conflict', 'No card is saved yet: top up once by card with "keep this card for auto-recharge" ticked.', 'enabled');
      }
      if (before.flaggedAt !== null) {
        throw new ApiError('conflict', 'Auto-recharge cannot be turned on while the account is flagged by a disputed card payment; top up by hand, or ask an administrator.', 'enabled');
      }
      const limits = config.auto_recharge;
      const currency = config.currency.toUpperCase();
      const threshold = amount(body, 'threshold', 'The threshold');
      const maxThreshold = unitsToNano(limits.max_threshold);
      if (threshold > maxThreshold) throw invalid('threshold', `The threshold is at most ${formatUnits(maxThreshold)} on this gateway (payments.stripe.auto_recharge.max_threshold).`);
      const recharge = parseMinor(body.amount, config.currency);
      const range = `${formatMinor(config.min_amount, config.currency)} to ${formatMinor(config.max_amount, config.currency)}`;
      if (recharge === null || recharge < config.min_amount || recharge > config.max_amount) throw invalid('amount', `The recharge amount must be from ${range} ${currency}.`);
      const cap = parseMinor(body.monthly_cap, config.currency);
      if (cap === null || cap < recharge) throw invalid('monthly_cap', 'The monthly cap must be at least one recharge amount.');
      if (cap > limits.max_monthly_cap) {
        throw invalid('monthly_cap', `The monthly cap is at most ${formatMinor(limits.max_monthly_cap, config.currency)} ${currency} on this gateway (payments.stripe.auto_recharge.max_monthly_cap).`);
      }
      // Turning it on, or letting it charge more or sooner, lets the session charge the card: the owner confirms.
      const raised = !before.autoRecharge || threshold > before.threshold || recharge > before.rechargeMinor || cap > before.monthlyCapMinor;
      if (raised) await requirePasswordOrCode(deps, ctx.ip, account, body, before.autoRecharge ? 'Raising auto-recharge' : 'Turning auto-recharge on');
      // Turned on again: the failures that turned it off are forgiven.
      saved = await deps.store.payments.saveProfile(account.id, { autoRecharge: true, threshold, rechargeMinor: recharge, monthlyCapMinor: cap, failures: 0, lastError: null, needsAction: false });
    }
    await deps.autoRecharge.refresh();
    const after = rechargeView(saved, config.currency);
    await audit(deps, ctx, { action: 'payment.settings', target: account.id, accountId: account.id, before: rechargeAudit(rechargeView(before, config.currency)), after: rechargeAudit(after) });
    deps.logger.info({ account: account.name, via, enabled: after.enabled }, 'console: auto-recharge settings changed');
    ctx.body = { auto_recharge: after };
  });

  router.get('/payments/:id', signedIn(deps), async (ctx) => {
    const { account } = callerOf(ctx);
    const order = await deps.store.payments.findOrder(ctx.params.id);
    if (order === null || (order.accountId !== account.id && account.role !== 'admin')) throw new ApiError('not_found', 'No such payment.');
    ctx.body = { payment: orderView(order) };
  });

  router.post('/payments/stripe/webhook', async (ctx) => {
    if (deps.runtime.current.config.payments.stripe === undefined) throw new ApiError('not_found', 'Card payments are not set up on this gateway.');
    const signature = ctx.get('stripe-signature');
    if (signature === '') throw new ApiError('invalid_request', 'A Stripe webhook carries a Stripe-Signature header.');
    let raw: Buffer;
    try {
      raw = await readRawBody(ctx.req, MAX_WEBHOOK_BYTES);
    } catch (error) {
      if (error instanceof GatewayError && error.code === 'TOLLGATE_ERR_BODY_TOO_LARGE') throw new ApiError('payload_too_large', `The body exceeds ${MAX_WEBHOOK_BYTES} bytes.`);
      throw error;
    }
    try {
      const result = await deps.payments.webhook(raw, signature);
      ctx.body = { received: true, event: result.event, duplicate: result.duplicate, ...(result.ignored !== undefined && { ignored: result.ignored }) };
    } catch (error) {
      if (error instanceof WebhookSignatureError) throw new ApiError('invalid_request', `The webhook's signature does not verify: ${error.message}`);
      if (error instanceof WebhookEventError) throw new ApiError('invalid_request', error.message);
      if (error instanceof WebhookInFlightError) throw new ApiError('conflict', error.message);
      throw error;
    }
  });

  router.get('/admin/payments', ...admin, async (ctx) => {
    const status = single(ctx.query.status, 'status');
    if (status !== undefined && !ORDER_STATUSES.includes(status as OrderStatus)) throw invalid('status', `The status is one of ${ORDER_STATUSES.join(', ')}.`);
    const account = single(ctx.query.account, 'account');
    const accountId = account === undefined ? undefined : ((await deps.store.findAccountByName(account))?.id ?? account);
    const [orders, debits] = await Promise.all([
      deps.store.payments.listOrders({ ...(accountId !== undefined && { accountId }), ...(status !== undefined && { status: status as OrderStatus }), limit: limitParam(ctx.query.limit, 200, 5000) }),
      deps.store.payments.listDebits(accountId ?? null, 1000),
    ]);
    // Names beside ids: the account of each payment and debit, as it is called now.
    const names = new Map((await deps.store.listAccounts()).map((named) => [named.id, named.name]));
    const named = <T extends { account_id: string }>(view: T) => ({ ...view, account_name: names.get(view.account_id) ?? null });
    ctx.body = { payments: orders.map(orderView).map(named), debits: debits.map(debitView).map(named) };
  });

  router.post('/admin/payments/reconcile', ...admin, async (ctx) => {
    stripeConfig(deps);
    const summary = await deps.payments.reconcile({ expire: false });
    ctx.body = summary;
  });
}
