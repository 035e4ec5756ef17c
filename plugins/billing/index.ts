/**
 * Prepaid billing: before a request is forwarded, the most it can cost is held against the account's
 * balance (402 when it cannot be); once the exchange ends, what it really cost is charged, the rest
 * of the hold released, and one usage record written to the ledger. The money is the engine's
 * (`src/billing/engine.ts`); this file decides when each step runs, and what the client is told.
 */
import { Readable } from 'node:stream';
import type { BalanceBook } from '../../src/billing/book';
import { askedService } from '../../src/billing/asked-service';
import { budgetChecks, sessionBudgetChecks } from '../../src/billing/budgets';
import { clientTrail, type ClientTrail } from '../../src/billing/client-trail';
import { costsFor, ratesFor } from '../../src/billing/config-rates';
import { BillingEngine } from '../../src/billing/engine';
import { dearestHold, type HoldEstimate } from '../../src/billing/hold-amount';
import { formatUnits } from '../../src/billing/money';
import { isFree } from '../../src/billing/prices';
import type { Bill } from '../../src/billing/request-charge';
import type { ModelRates } from '../../src/billing/service-levels';
import { withTranslatedSearches } from '../../src/billing/translated-searches';
import type { BillingPluginConfig } from '../../src/config/types';
import type { ExchangeOutcome, GatewayContext, Next, ParsedRequest } from '../../src/kernel/context';
import { toGatewayError } from '../../src/kernel/errors';
import { need } from '../../src/kernel/need';
import type { RequestReach } from '../../src/protocols/request-reach';
import type { BudgetCheck, ChargeRecord } from '../../src/store/store';
import type { AuthState } from '../auth';
import type { PluginDefinition } from '../kit';

const NO_BUDGETS: readonly BudgetCheck[] = [];

/** The billing plugin's slot: the request's charge once it is settled (what metrics and logs read). */
interface BillingState {
  readonly charged: Promise<ChargeRecord>;
}

declare module '../../src/kernel/context' {
  interface GatewayState {
    billing?: BillingState;
  }
}

/** What the request's hold was, and the budgets it was checked against (the charge counts in each). */
interface Admitted {
  readonly hold: HoldEstimate | null;
  readonly budgets: readonly BudgetCheck[];
}

interface Priced {
  readonly request: ParsedRequest;
  readonly auth: AuthState;
  readonly rates: ModelRates;
  readonly reach: RequestReach;
  readonly trail: ClientTrail;
}

/** Holds what a priced request can cost, or throws why not; a free model holds nothing. */
async function admit(ctx: GatewayContext, engine: BillingEngine, config: BillingPluginConfig, { request, auth, rates, reach, trail }: Priced): Promise<Admitted> {
  if (isFree(rates.standard.card)) return { hold: null, budgets: NO_BUDGETS };
  const { endpoint, requestId } = ctx.state;
  // Refused before anything is held or forwarded: premium service the model has no price for.
  const asked = askedService(endpoint.id, request.body, ctx.headers, request.model.id, rates);
  const budgets = budgetChecks(ctx.state.config, auth.account, auth.key, auth.identity?.memberLimits?.budget, new Date(), engine.periods);
  const sessionBudgets = sessionBudgetChecks(auth.account, auth.key, trail.sessionId);
  const referenced = reach.responseIds.length + reach.conversationIds.length === 0 ? null : [...reach.responseIds, ...reach.conversationIds];
  const estimate = dearestHold(
    {
      rawBytes: request.raw.length,
      reach,
      referencedTokens: referenced === null ? 0 : await engine.referencedTokens(referenced),
      defaultToolUses: config.server_tool_uses,
    },
    request.model,
    rates,
    asked.tiers,
  );
  await engine.hold(
    {
      requestId,
      accountId: auth.account.id,
      keyId: auth.key.id,
      ...(auth.key.memberAccountId != null && { memberAccountId: auth.key.memberAccountId }),
      amount: estimate.amount,
      keyLimited: auth.key.spendLimit !== null,
      budgets,
      ...(sessionBudgets.length === 0 ? {} : { sessionBudgets }),
    },
    estimate,
  );
  return { hold: estimate, budgets };
}

/** Billing offers its balance book: the console's balances and credits go through it (src/admin/funds.ts). */
export const billingPlugin: PluginDefinition<'billing', BalanceBook> = {
  name: 'billing',
  priority: 1200,
  stage: 'hold',
  dependsOn: ['auth'],
  async setup(config: BillingPluginConfig, kit) {
    const engine = await BillingEngine.open(config, kit);
    return {
      service: engine.book,
      handle: async function billingPlugin(ctx: GatewayContext, next: Next) {
        const { endpoint, requestId } = ctx.state;
        if (!endpoint.generates) {
          const request = need(ctx, 'request');
          if (!isFree(ratesFor(ctx.state.config, request.model.id).standard.card)) await engine.requireFunds(need(ctx, 'auth').account.id);
          return next();
        }
        const request = need(ctx, 'request');
        const auth = need(ctx, 'auth');
        const rates = ratesFor(ctx.state.config, request.model.id);
        const reach = withTranslatedSearches(request.reach, endpoint, request.body, request.model, ctx.state.config);
        // Read before the hold: the session a request names is what its session budgets count.
        const trail = clientTrail((field) => ctx.get(field), request.body.model, request.model.id);
        const { hold, budgets } = await admit(ctx, engine, config, { request, auth, rates, reach, trail });

        const { clientRequestId } = ctx.state;
        const bill: Bill = {
          requestId,
          clientRequestId,
          accountId: auth.account.id,
          keyId: auth.key.id,
          memberAccountId: auth.key.memberAccountId ?? null,
          request,
          endpoint: endpoint.id,
          reach,
          rates,
          costs: costsFor(ctx.state.config, request.model.id),
          held: hold?.amount ?? null,
          hold,
          budgets,
          startedAt: performance.now(),
          trail,
        };
        let charged!: (charge: ChargeRecord) => void;
        ctx.state.billing = { charged: new Promise<ChargeRecord>((resolve) => (charged = resolve)) };
        const settleOnce = (outcome: ExchangeOutcome | null, status: number) => engine.settle(bill, outcome, status).then((charge) => (charged(charge), charge));
        try {
          await next();
        } catch (error) {
          // Refused or failed before an answer: nothing produced, nothing owed; the hold is released.
          const outcome = ctx.state.exchange === undefined ? null : await ctx.state.exchange.finished;
          engine.track(settleOnce(outcome, toGatewayError(error).status));
          throw error;
        }
        const exchange = ctx.state.exchange;
        if (exchange === undefined) return engine.track(settleOnce(null, ctx.status));
        if (ctx.body instanceof Readable) {
          // A stream outlives this middleware: it is charged when it ends, however it ends.
          return engine.track(exchange.finished.then((outcome) => settleOnce(outcome, outcome.status)));
        }
        // Tracked as a stream's is: a request cut off by shutdown still settles before the book closes.
        const settled = exchange.finished.then((outcome) => settleOnce(outcome, ctx.status));
        engine.track(settled);
        const charge = await settled;
        if (config.cost_header) {
          ctx.set('x-tollgate-cost', formatUnits(charge.cost));
          if (charge.overage > 0n) ctx.set('x-tollgate-overage', formatUnits(charge.overage));
        }
      },
      // Billing fails closed: without its balance book no request can be served, so readiness asks it.
      ready: () => engine.book.ping(),
      coversStoreOutage: () => engine.coversStoreOutage(),
      close: () => engine.close(),
    };
  },
};
