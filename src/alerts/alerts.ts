/**
 * Alerts before budgets and balances bite: after each charge, the budgets it counted in are compared
 * with the thresholds (`alerts.thresholds`, percent of each budget) and the account's balance with
 * `alerts.low_balance`. An alert fires once per budget period and threshold (once per fall below the
 * low balance, until the next credit), however many requests cross it on however many instances: the
 * store records each under a unique name, and only the instance whose insert wins delivers it (the
 * webhook, the audit log, `tollgate_budget_alerts_total`; the console reads the store). All of it runs
 * after the charge, never on a request's path.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { BalanceBook } from '../billing/book';
import { PeriodCache } from '../billing/budget-period';
import { formatUnits, unitsToNano } from '../billing/money';
import type { GatewayConfig } from '../config/types';
import type { GatewayMetrics } from '../metrics/metrics';
import type { BudgetCheck, ChargeRecord, Store } from '../store/store';
import { AlertWebhook } from './webhook';

type AlertsConfig = GatewayConfig['alerts'];

/** Names already fired (or found fired) here, so a crossed threshold costs no store write per request. */
const FIRED_KEPT = 10_000;

export interface AlertDeps {
  readonly store: Store;
  readonly book: BalanceBook;
  readonly metrics: GatewayMetrics;
  readonly logger: Logger;
}

interface Firing {
  readonly once: string;
  readonly accountId: string;
  readonly keyId: string | null;
  readonly kind: 'budget' | 'balance';
  readonly threshold: string;
  readonly payload: Record<string, unknown>;
}

export class BudgetAlerts {
  private readonly thresholds: readonly number[];
  private readonly lowBalance: bigint | null;
  private readonly webhook: AlertWebhook | null;
  private readonly periods = new PeriodCache();
  private readonly fired = new Set<string>();
  private readonly running = new Set<Promise<void>>();

  constructor(
    config: AlertsConfig,
    private readonly deps: AlertDeps,
  ) {
    this.thresholds = [...config.thresholds].sort((a, b) => a - b);
    this.lowBalance = config.low_balance === '' ? null : unitsToNano(config.low_balance);
    this.webhook = config.webhook.url === '' ? null : new AlertWebhook(config.webhook, deps.store, deps.logger);
    this.webhook?.resume().catch((error: unknown) => deps.logger.warn({ err: error }, 'alerts: resuming undelivered alerts failed'));
  }

  /** Looks at what `charge` moved, in the background; never throws, never delays the caller. */
  afterCharge(charge: ChargeRecord, budgets: readonly BudgetCheck[]): void {
    if (charge.cost === 0n || (budgets.length === 0 && this.lowBalance === null)) return;
    const work = this.evaluate(charge, budgets).catch((error: unknown) => this.deps.logger.warn({ err: error, requestId: charge.requestId }, 'alerts: checking thresholds failed'));
    this.running.add(work);
    void work.finally(() => this.running.delete(work));
  }

  /**
   * A budget that could not admit a request is as good as spent: its 100 % alert fires (once a period,
   * like any threshold, whether or not 100 is among `alerts.thresholds`), saying it blocks until the reset.
   */
  afterBudgetRefusal(accountId: string, budget: BudgetCheck): void {
    if (this.fired.has(onceOf(budget, 100))) return;
    const work = this.blocked(accountId, budget).catch((error: unknown) => this.deps.logger.warn({ err: error, accountId }, 'alerts: the blocked budget alert failed'));
    this.running.add(work);
    void work.finally(() => this.running.delete(work));
  }

  private async blocked(accountId: string, budget: BudgetCheck): Promise<void> {
    const spent = await this.deps.book.budgetSpent(budget);
    await this.fire({
      once: onceOf(budget, 100),
      accountId,
      keyId: budget.scope === 'key' ? budget.id : null,
      kind: 'budget',
      threshold: '100',
      payload: {
        type: 'budget.threshold',
        account_id: accountId,
        key_id: budget.scope === 'key' ? budget.id : null,
        budget: { scope: budget.scope, amount: formatUnits(budget.amount), period: budget.period, timezone: budget.timezone },
        threshold_percent: 100,
        blocked: true,
        spent: formatUnits(spent),
        period_start: budget.start.toISOString(),
        resets_at: budget.end.toISOString(),
      },
    });
  }

  /** Waits for the checks under way (their deliveries go on), then stops retrying deliveries. */
  async close(): Promise<void> {
    await Promise.all(this.running);
    this.webhook?.close();
  }

  private async evaluate(charge: ChargeRecord, budgets: readonly BudgetCheck[]): Promise<void> {
    for (const budget of budgets) {
      // The period the charge counts in, which is the hold's unless a period ended meanwhile.
      const { start, end } = this.periods.at(charge.createdAt, budget.period, budget.timezone);
      const check = { ...budget, start, end };
      const crossed = this.thresholds.filter((threshold) => !this.fired.has(onceOf(check, threshold)));
      if (crossed.length === 0) continue;
      const spent = await this.deps.book.budgetSpent(check);
      for (const threshold of crossed) {
        if (spent * 100n < budget.amount * BigInt(threshold)) break;
        await this.fire({
          once: onceOf(check, threshold),
          accountId: charge.accountId,
          keyId: budget.scope === 'key' ? budget.id : null,
          kind: 'budget',
          threshold: String(threshold),
          payload: {
            type: 'budget.threshold',
            account_id: charge.accountId,
            key_id: budget.scope === 'key' ? budget.id : null,
            budget: { scope: budget.scope, amount: formatUnits(budget.amount), period: budget.period, timezone: budget.timezone },
            threshold_percent: threshold,
            spent: formatUnits(spent),
            period_start: start.toISOString(),
            resets_at: end.toISOString(),
          },
        });
      }
    }
    if (this.lowBalance !== null) await this.checkBalance(charge.accountId, this.lowBalance);
  }

  /** Fires when the balance is below the threshold, once until a credit (the latest credit names the fall). */
  private async checkBalance(accountId: string, threshold: bigint): Promise<void> {
    const { balance } = await this.deps.book.balance(accountId);
    if (balance >= threshold) return;
    const [latest] = await this.deps.store.listCredits(accountId, 1);
    const once = `balance:${accountId}:${latest?.id ?? 'none'}`;
    if (this.fired.has(once)) return;
    await this.fire({
      once,
      accountId,
      keyId: null,
      kind: 'balance',
      threshold: 'low',
      payload: { type: 'balance.low', account_id: accountId, balance: formatUnits(balance), low_balance: formatUnits(threshold) },
    });
  }

  private async fire(firing: Firing): Promise<void> {
    this.remember(firing.once);
    const createdAt = new Date();
    const id = `evt_${randomBytes(12).toString('hex')}`;
    const body = JSON.stringify({ id, created_at: createdAt.toISOString(), ...firing.payload });
    const recorded = await this.deps.store.recordAlert({ id, once: firing.once, accountId: firing.accountId, keyId: firing.keyId, kind: firing.kind, body, createdAt });
    if (!recorded) return;
    this.deps.metrics.recordBudgetAlert(firing.kind, firing.threshold);
    this.deps.logger.info({ alert: id, account: firing.accountId, kind: firing.kind, threshold: firing.threshold }, 'alerts: fired');
    this.webhook?.send({ id, body, attempts: 0 });
    await this.deps.store.appendAudit({
      actor: 'server',
      surface: 'server',
      action: 'budget.alert',
      target: firing.keyId ?? firing.accountId,
      accountId: firing.accountId,
      before: null,
      after: JSON.parse(body) as Record<string, unknown>,
      requestId: null,
    });
  }

  private remember(once: string): void {
    if (this.fired.size >= FIRED_KEPT) this.fired.clear();
    this.fired.add(once);
  }
}

function onceOf(check: BudgetCheck, threshold: number): string {
  return `budget:${check.scope}:${check.id}:${check.start.getTime()}:${threshold}`;
}
