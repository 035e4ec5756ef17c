/**
 * The ledger's health: what waits to be written, what the store refused, and how far the live
 * balances are from the ledger. Part of the gateway's registry (`GatewayMetrics.ledger`).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Backlog } from '../billing/ledger-writer';

const UNITS = 1e9;

export class LedgerMetrics {
  /** Where the backlog gauges read from: the billing plugin of the chain serving now. */
  private backlog: (() => Backlog) | null = null;
  /** Bytes in the outbox the store has not confirmed; null without an outbox. */
  private outbox: (() => number) | null = null;
  private readonly replayed: Counter<'result'>;
  private readonly setAside: Counter;
  private readonly drift: Gauge;
  private readonly driftTotal: Gauge;

  constructor(registry: Registry) {
    const metrics = this;
    new Gauge({
      name: 'tollgate_ledger_queued_charges',
      help: 'Charges settled and not yet written to the ledger (queued or being written): what a kill -9 now would lose.',
      registers: [registry],
      collect() {
        this.set(metrics.backlog?.().charges ?? 0);
      },
    });
    new Gauge({
      name: 'tollgate_ledger_queued_age_seconds',
      // Summed over workers (server.workers) it would mean nothing: the oldest wait of any of them.
      aggregator: 'max',
      help: 'How long the oldest charge not yet written to the ledger has waited.',
      registers: [registry],
      collect() {
        this.set((metrics.backlog?.().oldestAgeMs ?? 0) / 1000);
      },
    });
    new Gauge({
      name: 'tollgate_ledger_outbox_bytes',
      help: 'Bytes of charges in the outbox that the store has not confirmed yet (bounded by billing.outbox_max_bytes).',
      registers: [registry],
      collect() {
        this.set(metrics.outbox?.() ?? 0);
      },
    });
    this.replayed = new Counter({
      name: 'tollgate_ledger_outbox_replayed_total',
      help: 'Charges replayed from the outbox after a restart: written (the store did not have them) or already_recorded (a no-op).',
      labelNames: ['result'],
      registers: [registry],
    });
    this.setAside = new Counter({
      name: 'tollgate_ledger_set_aside_total',
      help: 'Charges the store refused to record, set aside in set_aside_charges (or, failing that, only logged).',
      registers: [registry],
    });
    this.drift = new Gauge({
      name: 'tollgate_ledger_drift_units',
      // Every worker checks the same ledger: over workers, one reading, not their sum.
      aggregator: 'max',
      help: 'Sum over accounts of |live balance - (ledger balance - open holds - queued charges)| at the last periodic check, in currency units; 0 when nothing drifts (tollgate ledger verify names the accounts).',
      registers: [registry],
    });
    this.driftTotal = new Gauge({
      name: 'tollgate_ledger_drifting_accounts',
      aggregator: 'max',
      help: 'Accounts whose live balance differs from the ledger at the last periodic check.',
      registers: [registry],
    });
  }

  watchBacklog(backlog: () => Backlog): void {
    this.backlog = backlog;
  }

  watchOutbox(undrainedBytes: () => number): void {
    this.outbox = undrainedBytes;
  }

  recordReplayed(written: number, alreadyRecorded: number): void {
    if (written > 0) this.replayed.inc({ result: 'written' }, written);
    if (alreadyRecorded > 0) this.replayed.inc({ result: 'already_recorded' }, alreadyRecorded);
  }

  recordSetAside(): void {
    this.setAside.inc();
  }

  /** The last check's drift by account (drifting accounts only). */
  recordDrift(drifts: ReadonlyMap<string, bigint>): void {
    let total = 0n;
    for (const amount of drifts.values()) total += amount < 0n ? -amount : amount;
    this.drift.set(Number(total) / UNITS);
    this.driftTotal.set(drifts.size);
  }
}
