/**
 * The billing engine behind the billing plugin: the balance book, the ledger writer with the outbox
 * in front of it, the timers beside them, and the two money steps of a paid request, hold and settle.
 * The plugin decides when each step runs and what the client is told; this decides the money.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { BudgetAlerts } from '../alerts/alerts';
import type { BillingPluginConfig, GatewayConfig } from '../config/types';
import type { ExchangeOutcome } from '../kernel/context';
import { GatewayError } from '../kernel/errors';
import type { GatewayMetrics } from '../metrics/metrics';
import type { Outbox } from '../outbox/outbox';
import { outboxFolder } from '../outbox/folder';
import { acquireOutbox, releaseOutbox } from '../outbox/shared-outboxes';
import { warnIfReadableByOthers } from '../private-files';
import type { ChargeRecord, Hold, HoldResult, Store } from '../store/store';
import type { BalanceBook } from './book';
import { startDriftCheck, startSweeper } from './book-sweeps';
import { openBookWriter } from './book-writer';
import { PeriodCache } from './budget-period';
import type { HoldEstimate } from './hold-amount';
import { InFlight } from './in-flight';
import type { LedgerWriter } from './ledger-writer';
import { formatUnits } from './money';
import { openBook } from './open-book';
import { openReplySizes, type ReplySizes } from './reply-sizes';
import { backlogged, outboxRefusal, refusal, unavailable } from './refusals';
import { chargeNow, chargeOf, replyWeight, type Bill } from './request-charge';
import { tierRates } from './service-levels';
import type { SettledCharges } from './settled';

/** The outbox's group window: the most a kill -9 can lose, in time. */
const OUTBOX_SYNC_MS = 10;

export interface EngineDeps {
  readonly config: GatewayConfig;
  readonly store: Store;
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
  /** Told of each charge once it reached the live balances (auto-recharge listens). */
  readonly settled?: SettledCharges;
}

export class BillingEngine {
  /** Budget periods, shared by every request's budget checks. */
  readonly periods = new PeriodCache();
  private readonly inFlight = new InFlight();

  private constructor(
    readonly book: BalanceBook,
    private readonly config: BillingPluginConfig,
    private readonly deps: EngineDeps,
    private readonly alerts: BudgetAlerts,
    private readonly replySizes: ReplySizes & { close?(): Promise<void> },
    private readonly outbox: Outbox | null,
    private readonly writer: LedgerWriter,
    private readonly timers: readonly NodeJS.Timeout[],
  ) {}

  static async open(config: BillingPluginConfig, deps: EngineDeps): Promise<BillingEngine> {
    const { store, logger, metrics } = deps;
    const book = await openBook(deps.config, store, logger);
    const alerts = new BudgetAlerts(deps.config.alerts, { store, book, metrics, logger });
    const replySizes = await openReplySizes(deps.config, logger);
    const outbox = config.outbox_max_bytes > 0 && store.durable !== false ? acquireOutbox(outboxFolder(config.outbox_path), { syncMs: OUTBOX_SYNC_MS, logger }) : null;
    if (outbox !== null) warnIfReadableByOthers(logger, [outbox.dir]);
    const writer = openBookWriter(
      store,
      book,
      {
        intervalMs: config.flush_interval_ms,
        maxRecords: config.flush_max_records,
        onSetAside: () => metrics.ledger.recordSetAside(),
        outbox: outbox ?? undefined,
        onAdoptFailed: (error) => logger.warn({ err: error }, 'billing: counting replayed charges in the live balances failed; the drift check shows what it left'),
        onReplayed: (written, alreadyRecorded) => metrics.ledger.recordReplayed(written, alreadyRecorded),
      },
      logger,
    );
    const replay = outbox?.takeReplay() ?? [];
    if (replay.length > 0) {
      logger.warn({ records: replay.length, outbox: outbox!.dir }, 'billing: replaying charges a previous process left in the outbox');
      writer.adopt(replay);
    }
    if (outbox !== null) {
      metrics.ledger.watchOutbox(() => outbox.undrainedBytes);
      // Kept in Redis past this process: a check or a seed made while it is stopped counts its charges as on their way.
      book.liveCopy?.registerOutbox(`${hostname()}:${outbox.dir}`).catch((error: unknown) => logger.warn({ err: error }, 'billing: registering the outbox in Redis failed'));
    }
    metrics.ledger.watchBacklog(() => writer.backlog());
    const drift = startDriftCheck(book, store, metrics.ledger, logger, config.drift_check_interval_ms);
    const timers = [startSweeper(book, logger, config.sweep_interval_ms), ...(drift === null ? [] : [drift])];
    return new BillingEngine(book, config, deps, alerts, replySizes, outbox, writer, timers);
  }

  /** What the replies and conversations a request references weigh, as input tokens; null when any is unknown. */
  referencedTokens(ids: readonly string[]): Promise<number | null> {
    return this.replySizes.total(ids);
  }

  /**
   * Holds what the request can cost, or throws what the client is told: the ledger too far behind,
   * this instance closing, the book away, or the hold refused. Admitted once this resolves.
   */
  async hold(hold: Omit<Hold, 'expiresAt'>, estimate: HoldEstimate): Promise<void> {
    const expiresAt = new Date(Date.now() + this.config.hold_ttl_ms);
    // Checked and counted in one step (no await between), so concurrent requests cannot overshoot it.
    const backlog = this.writer.backlog();
    const behind = this.outbox !== null ? outboxRefusal(this.config, this.outbox) : backlogged(this.config, this.inFlight.admitted + backlog.charges, backlog.oldestAgeMs);
    if (behind !== null) throw behind;
    if (this.inFlight.closing) throw unavailable(new Error('this instance is shutting down'));
    this.inFlight.admit();
    let result: HoldResult;
    try {
      // Object.assign, not `{ ...hold, expiresAt }`: V8 copies a spread followed by more properties on a
      // slow path (docs/benchmarks.md, the CPU cuts).
      result = await this.book.hold(Object.assign({}, hold, { expiresAt }));
    } catch (error) {
      this.inFlight.done(true);
      throw unavailable(error);
    }
    if (!result.ok) {
      this.inFlight.done(true);
      if (result.reason === 'budget') this.alerts.afterBudgetRefusal(hold.accountId, result.budget);
      throw refusal(result, estimate);
    }
  }

  /** Charges the request: live balance now, ledger in the next batch. Never throws. */
  async settle(bill: Bill, outcome: ExchangeOutcome | null, status: number): Promise<ChargeRecord> {
    // Counted as admitted until it is in the writer's queue, so the backlog bound never misses it.
    try {
      // A charge that needs no count is built without an await: one async step (the book's) per plain request.
      const charge = chargeNow(bill, outcome, status, this.config.overage) ?? (await chargeOf(bill, outcome, status, this.config.overage));
      this.warnIfUnusual(bill, charge);
      this.remember(bill, outcome, charge);
      try {
        await this.book.settle(charge, bill.budgets);
        if (charge.cost > 0n) this.deps.settled?.emit(charge);
      } catch (error) {
        // The ledger still gets the charge; the live hold expires and the sweeper frees it.
        this.deps.logger.error({ err: error, requestId: bill.requestId }, 'billing: settling the live balance failed');
      }
      this.writer.enqueue(charge);
      this.alerts.afterCharge(charge, bill.budgets);
      return charge;
    } finally {
      this.inFlight.done(bill.held !== null);
    }
  }

  /** Settles `work` before the book closes, however the request ended. */
  track(work: Promise<unknown>): void {
    this.inFlight.track(work);
  }

  /**
   * `count_tokens` is not billed, but it is served with the operator's upstream key: an account
   * that could not pay for any request of a priced model gets the 402 every other endpoint gives.
   */
  async requireFunds(accountId: string): Promise<void> {
    let balance: { balance: bigint; held: bigint };
    try {
      balance = await this.book.balance(accountId);
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

  /** Only a book with its own copy of the balances (Redis) holds without the store; the others read it. */
  coversStoreOutage(): boolean {
    return this.outbox !== null && this.book.liveCopy !== null && outboxRefusal(this.config, this.outbox) === null;
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearInterval(timer);
    // Requests cut off by the shutdown settle after it began; their charges must reach the writer
    // (and the book's figures) before either closes, or live and ledger part (SIGTERM drift).
    await this.inFlight.drain(this.config.hold_ttl_ms);
    await this.alerts.close();
    await this.writer.close();
    if (this.outbox !== null && this.outbox.undrainedBytes === 0) await this.book.liveCopy?.registerOutbox(null).catch(() => undefined);
    await this.book.close();
    if (this.outbox !== null) await releaseOutbox(this.outbox);
    await this.replySizes.close?.();
  }

  /** A charge above its hold, or at a tier without a price, is told in the log. */
  private warnIfUnusual(bill: Bill, charge: ChargeRecord): void {
    const { logger } = this.deps;
    if (charge.overage > 0n || charge.unbilled > 0n) {
      logger.warn(
        { requestId: bill.requestId, accountId: charge.accountId, model: charge.model, held: formatUnits(charge.held), cost: formatUnits(charge.cost), overage: formatUnits(charge.overage), unbilled: formatUnits(charge.unbilled) },
        charge.overage > 0n ? 'billing: the upstream billed more than was held; charged in full' : 'billing: the upstream billed more than was held; capped at the hold (overage: cap)',
      );
    }
    if (charge.prices !== null && charge.serviceTier !== null && tierRates(bill.rates, charge.serviceTier) === undefined) {
      logger.warn(
        { requestId: bill.requestId, model: charge.model, serviceTier: charge.serviceTier },
        'billing: the reply reports a service tier this model has no price for; charged at the standard rates (price.tiers)',
      );
    }
  }

  /** What this reply (and the conversation it continues) weighs, for requests that reference them. */
  private remember(bill: Bill, outcome: ExchangeOutcome | null, charge: ChargeRecord): void {
    if (outcome === null || charge.usageSource === 'none') return;
    const weight = replyWeight(charge);
    if (outcome.replyId !== null) this.replySizes.remember(outcome.replyId, weight);
    for (const conversation of bill.reach.conversationIds) {
      this.replySizes.remember(conversation, weight);
    }
  }
}
