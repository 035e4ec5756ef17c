/**
 * Prepaid billing: before a request is forwarded, the most it can cost is held against the account's
 * balance (402 when it cannot be); once the exchange ends, what it really cost is charged, the rest
 * of the hold released, and one usage record written to the ledger. Money lives in `src/billing`;
 * this file decides when, and what the client is told.
 */
import { hostname } from 'node:os';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BalanceBook } from '../../src/billing/book';
import { askedService } from '../../src/billing/asked-service';
import { dearestHold, type HoldEstimate } from '../../src/billing/hold-amount';
import { LedgerWriter } from '../../src/billing/ledger-writer';
import type { Outbox } from '../../src/outbox/outbox';
import { acquireOutbox, releaseOutbox } from '../../src/outbox/shared-outboxes';
import { outboxFolder } from '../../src/outbox/folder';
import { warnIfReadableByOthers } from '../../src/private-files';
import { formatUnits } from '../../src/billing/money';
import { openBook } from '../../src/billing/open-book';
import { costOf, isFree, snapshotOf, type NanoPrice } from '../../src/billing/prices';
import { openReplySizes } from '../../src/billing/reply-sizes';
import { clientTrail, type ClientTrail } from '../../src/billing/client-trail';
import { chargedLevel, FREE_RATES, rateTable, tierRates, type ModelRates } from '../../src/billing/service-levels';
import { billedTokens } from '../../src/billing/settlement';
import { withTranslatedSearches } from '../../src/billing/translated-searches';
import { imageCharge, unreportedToolImages } from '../../src/billing/image-billing';
import type { BillingPluginConfig, GatewayConfig } from '../../src/config/types';
import type { ExchangeOutcome, GatewayContext, Next, ParsedRequest } from '../../src/kernel/context';
import type { AuthState } from '../auth';
import { need } from '../../src/kernel/need';
import { GatewayError, toGatewayError } from '../../src/kernel/errors';
import type { PluginDefinition, PluginKit } from '../kit';
import type { RequestReach } from '../../src/protocols/request-reach';
import { TOKEN_KINDS } from '../../src/protocols/types';
import type { BudgetCheck, ChargePrices, ChargeRecord, HoldResult } from '../../src/store/store';
import { PeriodCache } from '../../src/billing/budget-period';
import { BudgetAlerts } from '../../src/alerts/alerts';
import { budgetChecks, budgetName, resetTime, sessionBudgetChecks, sessionBudgetName } from '../../src/billing/budgets';

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

/** The outbox's group window: the most a kill -9 can lose, in time. */
const OUTBOX_SYNC_MS = 10;

/** Rate tables per config snapshot: computed once, reused by every request under that snapshot. */
const ratesByConfig = new WeakMap<GatewayConfig, ReadonlyMap<string, ModelRates>>();

function ratesFor(config: GatewayConfig, modelId: string): ModelRates {
  let table = ratesByConfig.get(config);
  if (table === undefined) ratesByConfig.set(config, (table = rateTable(config)));
  return table.get(modelId) ?? FREE_RATES;
}

function refusal(result: Exclude<HoldResult, { ok: true }>, estimate: HoldEstimate): GatewayError {
  const output = estimate.images === undefined ? `${estimate.outputTokens} output tokens` : `${estimate.images} images${estimate.outputTokens > 0 ? ` of up to ${estimate.outputTokens} image tokens in all` : ''}`;
  const need = `this request can cost up to ${formatUnits(estimate.amount)} (up to ${estimate.inputTokens} input tokens and ${output}${toolsText(estimate)})`;
  if (result.reason === 'budget') {
    const reset = resetTime(result.budget);
    return new GatewayError(
      'TOLLGATE_ERR_BUDGET_EXCEEDED',
      `${budgetName(result.budget)} is reached: ${need} and the budget has ${formatUnits(result.available)} left until it resets at ${reset}.`,
      { headers: { 'x-tollgate-budget-reset': reset }, refusedBy: `budget:${result.budget.scope}:${result.budget.period}` },
    );
  }
  if (result.reason === 'session_budget') {
    const { budget, spent } = result;
    return new GatewayError(
      'TOLLGATE_ERR_SESSION_BUDGET_EXCEEDED',
      `${sessionBudgetName(budget)} is reached for session "${budget.sessionId}": the session has spent ${formatUnits(spent)}, ${need}, and the session has ${formatUnits(result.available)} left. Stop here; a new session starts with its own budget.`,
      { headers: { 'x-tollgate-session-spent': formatUnits(spent) }, refusedBy: `session_budget:${budget.scope}` },
    );
  }
  if (result.reason === 'key_spend_limit') {
    return new GatewayError(
      'TOLLGATE_ERR_KEY_SPEND_LIMIT',
      `This API key's spend limit is reached: ${need} and the key has ${formatUnits(result.available)} left of its limit.`,
      { refusedBy: 'key' },
    );
  }
  return new GatewayError(
    'TOLLGATE_ERR_INSUFFICIENT_BALANCE',
    `Insufficient balance: ${need} and the account has ${formatUnits(result.available)} available. Top up in the console at /console/topup, or ${estimate.images === undefined ? 'lower max_tokens' : 'ask for fewer images'}.`,
    { refusedBy: 'account' },
  );
}

function toolsText(estimate: HoldEstimate): string {
  return Object.entries(estimate.toolCalls)
    .map(([tool, calls]) => `, ${calls} ${tool} calls`)
    .join('');
}

function unavailable(cause: unknown): GatewayError {
  return new GatewayError('TOLLGATE_ERR_BILLING_UNAVAILABLE', 'Billing is unavailable right now, so the request was not served; retry shortly.', {
    cause,
    headers: { 'retry-after': '1' },
  });
}

/**
 * The ledger is behind (store stalled or refusing writes): what is not written yet is what a crash
 * would lose, so no more paid requests until it catches up. Free models hold nothing and still pass.
 */
function backlogged(config: BillingPluginConfig, unwritten: number, oldestAgeMs: number): GatewayError | null {
  if (unwritten < config.max_queued_charges && oldestAgeMs < config.max_queued_age_ms) return null;
  return new GatewayError('TOLLGATE_ERR_BILLING_UNAVAILABLE', 'Billing is unavailable right now, so the request was not served; retry shortly.', {
    cause: new Error(`the ledger is behind: ${unwritten} charges not yet written, the oldest ${Math.round(oldestAgeMs)} ms old`),
    headers: { 'retry-after': String(Math.max(1, Math.ceil(config.max_queued_age_ms / 1000))) },
  });
}

/**
 * With the outbox, paid requests are served through a store outage: their charges wait on disk. What
 * stops them is the outbox's own bound, or a disk that refuses writes (nothing new would be durable).
 */
function outboxRefusal(config: BillingPluginConfig, outbox: Outbox): GatewayError | null {
  const error = outbox.writeError;
  const full = outbox.undrainedBytes >= config.outbox_max_bytes;
  if (error === null && !full) return null;
  const cause = error !== null
    ? new Error(`the outbox ${outbox.dir} cannot be written: ${error.message}`, { cause: error })
    : new Error(`the outbox holds ${outbox.undrainedBytes} bytes of charges the store has not confirmed (billing.outbox_max_bytes ${config.outbox_max_bytes})`);
  return new GatewayError('TOLLGATE_ERR_BILLING_UNAVAILABLE', 'Billing is unavailable right now, so the request was not served; retry shortly.', {
    cause,
    headers: { 'retry-after': '1' },
  });
}

/**
 * Keeps tollgate_ledger_drift_units current: every `intervalMs`, the live balances of a book that keeps
 * its own copy (Redis) are compared with the ledger. Null when there is nothing to compare or it is off.
 */
function startDriftCheck(book: BalanceBook, kit: PluginKit, intervalMs: number): NodeJS.Timeout | null {
  const live = book.liveCopy;
  if (live === null || intervalMs === 0) return null;
  const check = async (): Promise<void> => {
    const drifts = await live.drift(await kit.store.ledgerTotals());
    kit.metrics.ledger.recordDrift(new Map(drifts.map((drift) => [drift.accountId, drift.live - drift.ledger])));
    if (drifts.length > 0) {
      kit.logger.error({ accounts: drifts.map((drift) => drift.accountId) }, 'ledger: live balances differ from the ledger; tollgate ledger verify names them, tollgate ledger heal rebuilds them');
    }
  };
  const timer = setInterval(() => {
    check().catch((error: unknown) => kit.logger.warn({ err: error }, 'ledger: the drift check failed'));
  }, intervalMs);
  timer.unref();
  return timer;
}

interface Bill {
  readonly requestId: string;
  readonly clientRequestId: string | null;
  readonly auth: AuthState;
  readonly request: ParsedRequest;
  readonly endpoint: string;
  readonly reach: RequestReach;
  readonly rates: ModelRates;
  /** What was held: admission control, not a cap (see `chargeOf`). Null for a free model. */
  readonly held: bigint | null;
  /** What the hold estimated (an unfinished image generation is charged at least that); null for a free model. */
  readonly hold: HoldEstimate | null;
  /** The budgets the hold was checked against; the charge counts in each. */
  readonly budgets: readonly BudgetCheck[];
  readonly startedAt: number;
  readonly trail: ClientTrail;
}

/**
 * The request's charge: what the upstream reported (or, without readable usage, Tollgate's own count)
 * at the model's prices, in full. The hold only decided whether to admit the request; what the upstream
 * billed above it is charged and recorded as `overage`, or under `overage: cap` left uncharged and
 * recorded as `unbilled`. Nothing is dropped silently.
 */
async function chargeOf(bill: Bill, outcome: ExchangeOutcome | null, status: number, mode: BillingPluginConfig['overage']): Promise<ChargeRecord> {
  let { tokens, source } = await billedTokens(outcome, bill.request.body, bill.endpoint);
  let imageKey: string | null = null;
  if (bill.reach.image !== undefined) {
    ({ billed: { tokens, source }, imageKey } = await imageCharge({ tokens, source }, chargedLevel(bill.rates, tokens).card, bill.request.model, bill.reach.image, bill.request.body, bill.hold));
  } else {
    ({ tokens, source } = unreportedToolImages({ tokens, source }, bill.reach.toolImage));
  }
  // The reply's tier (`servedTier`) is recorded as the charge's service level, not as a token count.
  const level = chargedLevel(bill.rates, tokens);
  const images = tokens.images ?? 0;
  const cost = costOf(imageKey === null ? tokens : { ...tokens, imageKey }, level.card);
  const held = bill.held ?? 0n;
  const excess = bill.held !== null && cost > held ? cost - held : 0n;
  return {
    requestId: bill.requestId,
    clientRequestId: bill.clientRequestId,
    accountId: bill.auth.account.id,
    keyId: bill.auth.key.id,
    model: bill.request.model.id,
    provider: outcome?.provider ?? null,
    endpoint: bill.endpoint,
    // Field by field rather than spread: a literal of one shape, where spreads (and the rest pattern that
    // took the tier out) are copied key by key on every charge.
    inputTokens: tokens.inputTokens,
    cacheWriteTokens: tokens.cacheWriteTokens,
    cacheWrite1hTokens: tokens.cacheWrite1hTokens,
    cacheReadTokens: tokens.cacheReadTokens,
    outputTokens: tokens.outputTokens,
    imageInputTokens: tokens.imageInputTokens,
    imageOutputTokens: tokens.imageOutputTokens,
    toolCalls: tokens.toolCalls,
    images,
    cost: mode === 'cap' ? cost - excess : cost,
    held,
    overage: mode === 'charge' ? excess : 0n,
    unbilled: mode === 'cap' ? excess : 0n,
    prices: bill.held === null ? null : withImagePrice(snapshotFor(level.card), level.card, imageKey),
    serviceTier: level.serviceTier,
    longContext: level.longContext,
    usageSource: source,
    status: outcome?.status ?? status,
    outcome: outcome?.end.kind ?? 'failed',
    latencyMs: performance.now() - bill.startedAt,
    createdAt: new Date(),
    sessionId: bill.trail.sessionId,
    userAgent: bill.trail.userAgent,
    origin: bill.trail.origin,
    requestedModel: bill.trail.requestedModel,
    servedModel: outcome?.upstreamModel ?? null,
    attempts: outcome === null ? [] : outcome.attemptLog.map((attempt) => ({ provider: attempt.provider, outcome: attempt.outcome, ms: Math.round(attempt.durationMs) })),
    ttfbMs: bill.request.stream && outcome?.committedAt != null ? Math.max(0, outcome.committedAt - bill.startedAt) : null,
  };
}

/** A per-image charge's snapshot names the one image price it was charged at. */
function withImagePrice(snapshot: ChargePrices, card: NanoPrice, imageKey: string | null): ChargePrices {
  const nano = imageKey === null ? undefined : card.perImage[imageKey];
  return nano === undefined ? snapshot : { ...snapshot, per_image: { key: imageKey!, nano: String(nano) } };
}

/** Each price's snapshot, made once per price table rather than per charge. */
const snapshots = new WeakMap<NanoPrice, ChargePrices>();

function snapshotFor(price: NanoPrice): ChargePrices {
  let snapshot = snapshots.get(price);
  if (snapshot === undefined) snapshots.set(price, (snapshot = snapshotOf(price)));
  return snapshot;
}

/** All the tokens a reply weighs when a later request references it: it is billed again as input. */
function replyWeight(charge: ChargeRecord): number {
  return TOKEN_KINDS.reduce((sum, kind) => sum + charge[kind], 0);
}

/** Billing offers its balance book: the console's balances and credits go through it (src/admin/funds.ts). */
export const billingPlugin: PluginDefinition<'billing', BalanceBook> = {
  name: 'billing',
  priority: 1200,
  stage: 'hold',
  dependsOn: ['auth'],
  async setup(config: BillingPluginConfig, kit) {
    const book: BalanceBook = await openBook(kit.config, kit.store, kit.logger);
    const periods = new PeriodCache();
    const alerts = new BudgetAlerts(kit.config.alerts, { store: kit.store, book, metrics: kit.metrics, logger: kit.logger });
    const replySizes = await openReplySizes(kit.config, kit.logger);
    const outbox = config.outbox_max_bytes > 0 && kit.store.durable !== false ? acquireOutbox(outboxFolder(config.outbox_path), { syncMs: OUTBOX_SYNC_MS, logger: kit.logger }) : null;
    if (outbox !== null) warnIfReadableByOthers(kit.logger, [outbox.dir]);
    const live = book.liveCopy;
    const writer = new LedgerWriter(
      kit.store,
      {
        intervalMs: config.flush_interval_ms,
        maxRecords: config.flush_max_records,
        onWritten: live === null ? (charges) => book.written(charges) : undefined,
        writeThrough: live?.writeLedger.bind(live),
        // No longer queued: a book that counts queued charges stops counting it (the ledger has not got it).
        onSetAside: (charge) => (kit.metrics.ledger.recordSetAside(), book.written([charge])),
        outbox: outbox ?? undefined,
        instance: live?.instance ?? null,
        onAdopt: (charges) => {
          book.adopt(charges).catch((error: unknown) => kit.logger.warn({ err: error }, 'billing: counting replayed charges in the live balances failed; the drift check shows what it left'));
        },
        onReplayed: (written, alreadyRecorded) => kit.metrics.ledger.recordReplayed(written, alreadyRecorded),
      },
      kit.logger,
    );
    const replay = outbox?.takeReplay() ?? [];
    if (replay.length > 0) {
      kit.logger.warn({ records: replay.length, outbox: outbox!.dir }, 'billing: replaying charges a previous process left in the outbox');
      writer.adopt(replay);
    }
    if (outbox !== null) {
      kit.metrics.ledger.watchOutbox(() => outbox.undrainedBytes);
      // Kept in Redis past this process: a check or a seed made while it is stopped counts its charges as on their way.
      live?.registerOutbox(`${hostname()}:${outbox.dir}`).catch((error: unknown) => kit.logger.warn({ err: error }, 'billing: registering the outbox in Redis failed'));
    }
    kit.metrics.ledger.watchBacklog(() => writer.backlog());
    book.countUnwritten((counts) => writer.unwritten().reduce((sum, charge) => (counts(charge) ? sum + charge.cost : sum), 0n));
    /** Paid requests admitted (held) and not yet settled: their charges will join the writer's queue. */
    let admitted = 0;
    /** Set when billing closes: no new hold, and the close waits for the admitted ones to settle. */
    let closing = false;
    let lastSettled: (() => void) | null = null;
    const settling = new Set<Promise<void>>();
    const sweeper = setInterval(() => {
      book.releaseExpired(new Date()).then(
        (released) => released > 0 && kit.logger.warn({ released }, 'billing: released expired holds'),
        (error: unknown) => kit.logger.warn({ err: error }, 'billing: sweeping expired holds failed'),
      );
    }, config.sweep_interval_ms);
    sweeper.unref();
    const driftCheck = startDriftCheck(book, kit, config.drift_check_interval_ms);

    /** Charges the request: live balance now, ledger in the next batch. Never throws. */
    async function settle(bill: Bill, outcome: ExchangeOutcome | null, status: number): Promise<ChargeRecord> {
      // Counted as admitted until it is in the writer's queue, so the backlog bound never misses it.
      try {
        return await settleAndQueue(bill, outcome, status);
      } finally {
        if (bill.held !== null) admitted -= 1;
        if (admitted === 0) lastSettled?.();
      }
    }

    async function settleAndQueue(bill: Bill, outcome: ExchangeOutcome | null, status: number): Promise<ChargeRecord> {
      const charge = await chargeOf(bill, outcome, status, config.overage);
      if (charge.overage > 0n || charge.unbilled > 0n) {
        kit.logger.warn(
          { requestId: bill.requestId, accountId: charge.accountId, model: charge.model, held: formatUnits(charge.held), cost: formatUnits(charge.cost), overage: formatUnits(charge.overage), unbilled: formatUnits(charge.unbilled) },
          charge.overage > 0n ? 'billing: the upstream billed more than was held; charged in full' : 'billing: the upstream billed more than was held; capped at the hold (overage: cap)',
        );
      }
      if (charge.prices !== null && charge.serviceTier !== null && tierRates(bill.rates, charge.serviceTier) === undefined) {
        kit.logger.warn(
          { requestId: bill.requestId, model: charge.model, serviceTier: charge.serviceTier },
          'billing: the reply reports a service tier this model has no price for; charged at the standard rates (price.tiers)',
        );
      }
      remember(bill, outcome, charge);
      try {
        await book.settle(charge, bill.budgets);
        if (charge.cost > 0n) kit.settled?.emit(charge);
      } catch (error) {
        // The ledger still gets the charge; the live hold expires and the sweeper frees it.
        kit.logger.error({ err: error, requestId: bill.requestId }, 'billing: settling the live balance failed');
      }
      writer.enqueue(charge);
      alerts.afterCharge(charge, bill.budgets);
      return charge;
    }

    /** What this reply (and the conversation it continues) weighs, for requests that reference them. */
    function remember(bill: Bill, outcome: ExchangeOutcome | null, charge: ChargeRecord): void {
      if (outcome === null || charge.usageSource === 'none') return;
      const weight = replyWeight(charge);
      if (outcome.replyId !== null) replySizes.remember(outcome.replyId, weight);
      for (const conversation of bill.reach.conversationIds) {
        replySizes.remember(conversation, weight);
      }
    }

    /**
     * `count_tokens` is not billed, but it is served with the operator's upstream key: an account
     * that could not pay for any request of a priced model gets the 402 every other endpoint gives.
     */
    async function refuseWithoutFunds(ctx: GatewayContext): Promise<void> {
      const request = need(ctx, 'request');
      if (isFree(ratesFor(ctx.state.config, request.model.id).standard.card)) return;
      const { account } = need(ctx, 'auth');
      let balance: { balance: bigint; held: bigint };
      try {
        balance = await book.balance(account.id);
      } catch (error) {
        throw unavailable(error);
      }
      const available = balance.balance - balance.held;
      if (available > 0n) return;
      throw new GatewayError(
        'TOLLGATE_ERR_INSUFFICIENT_BALANCE',
        `Insufficient balance: the account has ${formatUnits(available)} available, not enough for any request to this model. Top up in the console at /console/topup.`,
      );
    }

    function track(work: Promise<unknown>): void {
      const done = work.then(() => undefined);
      settling.add(done);
      void done.finally(() => settling.delete(done));
    }

    return {
      service: book,
      handle: async function billingPlugin(ctx: GatewayContext, next: Next) {
        const { endpoint, requestId } = ctx.state;
        if (!endpoint.generates) {
          await refuseWithoutFunds(ctx);
          return next();
        }
        const request = need(ctx, 'request');
        const auth = need(ctx, 'auth');

        const rates = ratesFor(ctx.state.config, request.model.id);
        const reach = withTranslatedSearches(request.reach, endpoint, request.body, request.model, ctx.state.config);
        let hold: HoldEstimate | null = null;
        let budgets: readonly BudgetCheck[] = NO_BUDGETS;
        // Read before the hold: the session a request names is what its session budgets count.
        const trail = clientTrail((field) => ctx.get(field), request.body.model, request.model.id);
        if (!isFree(rates.standard.card)) {
          // Refused before anything is held or forwarded: premium service the model has no price for.
          const asked = askedService(endpoint.id, request.body, ctx.headers, request.model.id, rates);
          budgets = budgetChecks(ctx.state.config, auth.account, auth.key, new Date(), periods);
          const sessionBudgets = sessionBudgetChecks(auth.account, auth.key, trail.sessionId);
          const referenced = reach.responseIds.length + reach.conversationIds.length === 0 ? null : [...reach.responseIds, ...reach.conversationIds];
          const estimate = dearestHold(
            {
              rawBytes: request.raw.length,
              reach,
              referencedTokens: referenced === null ? 0 : await replySizes.total(referenced),
              defaultToolUses: config.server_tool_uses,
            },
            request.model,
            rates,
            asked.tiers,
          );
          const expiresAt = new Date(Date.now() + config.hold_ttl_ms);
          // Checked and counted in one step (no await between), so concurrent requests cannot overshoot it.
          const backlog = writer.backlog();
          const behind = outbox !== null ? outboxRefusal(config, outbox) : backlogged(config, admitted + backlog.charges, backlog.oldestAgeMs);
          if (behind !== null) throw behind;
          if (closing) throw unavailable(new Error('this instance is shutting down'));
          admitted += 1;
          let result: HoldResult;
          try {
            result = await book.hold({
              requestId,
              accountId: auth.account.id,
              keyId: auth.key.id,
              amount: estimate.amount,
              expiresAt,
              keyLimited: auth.key.spendLimit !== null,
              budgets,
              ...(sessionBudgets.length === 0 ? {} : { sessionBudgets }),
            });
          } catch (error) {
            admitted -= 1;
            if (admitted === 0) lastSettled?.();
            throw unavailable(error);
          }
          if (!result.ok) {
            admitted -= 1;
            if (admitted === 0) lastSettled?.();
            if (result.reason === 'budget') alerts.afterBudgetRefusal(auth.account.id, result.budget);
            throw refusal(result, estimate);
          }
          hold = estimate;
        }

        const { clientRequestId } = ctx.state;
        const bill: Bill = { requestId, clientRequestId, auth, request, endpoint: endpoint.id, reach, rates, held: hold?.amount ?? null, hold, budgets, startedAt: performance.now(), trail };
        let charged!: (charge: ChargeRecord) => void;
        ctx.state.billing = { charged: new Promise<ChargeRecord>((resolve) => (charged = resolve)) };
        const settleOnce = (outcome: ExchangeOutcome | null, status: number) => settle(bill, outcome, status).then((charge) => (charged(charge), charge));
        try {
          await next();
        } catch (error) {
          // Refused or failed before an answer: nothing produced, nothing owed; the hold is released.
          const outcome = ctx.state.exchange === undefined ? null : await ctx.state.exchange.finished;
          track(settleOnce(outcome, toGatewayError(error).status));
          throw error;
        }
        const exchange = ctx.state.exchange;
        if (exchange === undefined) return track(settleOnce(null, ctx.status));
        if (ctx.body instanceof Readable) {
          // A stream outlives this middleware: it is charged when it ends, however it ends.
          return track(exchange.finished.then((outcome) => settleOnce(outcome, outcome.status)));
        }
        // Tracked as a stream's is: a request cut off by shutdown still settles before the book closes.
        const settled = exchange.finished.then((outcome) => settleOnce(outcome, ctx.status));
        track(settled);
        const charge = await settled;
        if (config.cost_header) {
          ctx.set('x-tollgate-cost', formatUnits(charge.cost));
          if (charge.overage > 0n) ctx.set('x-tollgate-overage', formatUnits(charge.overage));
        }
      },
      // Billing fails closed: without its balance book no request can be served, so readiness asks it.
      ready: () => book.ping(),
      // Only a book with its own copy of the balances (Redis) holds without the store; the store's own tables and the in-process book read it.
      coversStoreOutage: () => outbox !== null && live !== null && outboxRefusal(config, outbox) === null,
      async close() {
        clearInterval(sweeper);
        if (driftCheck !== null) clearInterval(driftCheck);
        closing = true;
        // Requests cut off by the shutdown settle after it began; their charges must reach the writer
        // (and the book's figures) before either closes, or live and ledger part (SIGTERM drift).
        if (admitted > 0) await Promise.race([new Promise<void>((resolve) => (lastSettled = resolve)), sleep(config.hold_ttl_ms, undefined, { ref: false })]);
        await Promise.all(settling);
        await alerts.close();
        await writer.close();
        if (outbox !== null && outbox.undrainedBytes === 0) await live?.registerOutbox(null).catch(() => undefined);
        await book.close();
        if (outbox !== null) await releaseOutbox(outbox);
        await replySizes.close?.();
      },
    };
  },
};
