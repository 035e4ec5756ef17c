/**
 * Card payments as counters: orders by the state they reached, what was credited and taken back, and
 * how auto-recharge attempts ended. Part of the gateway's registry (`GatewayMetrics.payments`).
 */
import { Counter, type Registry } from 'prom-client';

const UNITS = 1e9;

export type PaymentOutcome = 'created' | 'paid' | 'failed' | 'expired' | 'refunded' | 'disputed' | 'unreachable';
export type RechargeOutcome = 'started' | 'paid' | 'failed' | 'needs_action' | 'capped' | 'turned_off' | 'flagged';

export class PaymentMetrics {
  private readonly payments: Counter;
  private readonly credited: Counter;
  private readonly debited: Counter;
  private readonly recharges: Counter;

  constructor(registry: Registry) {
    this.payments = new Counter({
      name: 'tollgate_payments_total',
      help: 'Card payment orders by the state they reached (created, paid, failed, expired, refunded, disputed; unreachable: Stripe did not answer the checkout).',
      labelNames: ['status'],
      registers: [registry],
    });
    this.credited = new Counter({
      name: 'tollgate_payments_credited_units_total',
      help: 'Balance units credited by card payments.',
      registers: [registry],
    });
    this.debited = new Counter({
      name: 'tollgate_payments_debited_units_total',
      help: 'Balance units taken back by refunds and disputes.',
      labelNames: ['kind'],
      registers: [registry],
    });
    this.recharges = new Counter({
      name: 'tollgate_auto_recharge_total',
      help: 'Auto-recharge attempts by outcome (started, paid, failed, needs_action, capped: the monthly cap refused one, turned_off: three failures in a row, flagged: refused while a disputed payment flags the account).',
      labelNames: ['outcome'],
      registers: [registry],
    });
  }

  order(status: PaymentOutcome): void {
    this.payments.inc({ status });
  }

  credit(amount: bigint): void {
    // Float only here, for Prometheus; the ledger keeps the exact figure.
    this.credited.inc(Number(amount) / UNITS);
  }

  debit(kind: 'refund' | 'dispute', amount: bigint): void {
    this.debited.inc({ kind }, Number(amount) / UNITS);
  }

  recharge(outcome: RechargeOutcome): void {
    this.recharges.inc({ outcome });
  }
}
