/**
 * The background half of "nothing lost when a webhook is missed": every `reconcile_interval_seconds`,
 * pending orders older than `pending_expiry_minutes` are looked up in Stripe, credited if paid (once,
 * as a webhook would), expired if Stripe still has them open. One instance (or worker) at a time does
 * it, under a lease in the store; the credit's own guard would make a second run harmless, only wasteful.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { StripeConfig } from '../config/types';
import type { PaymentsStore } from '../store/payments-store';
import type { Payments } from './payments';

const LEASE = 'payments-reconcile';
/** How often to look whether card payments were turned on by a reload, while they are off. */
const IDLE_CHECK_MS = 60_000;

export interface ReconcileJob {
  stop(): void;
}

export function startReconcileJob(payments: Payments, store: PaymentsStore, config: () => StripeConfig | undefined, logger: Logger): ReconcileJob {
  const holder = randomUUID();
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;

  const schedule = (): void => {
    if (stopped) return;
    const settings = config();
    const ms = settings === undefined || settings.reconcile_interval_seconds === 0 ? IDLE_CHECK_MS : settings.reconcile_interval_seconds * 1000;
    timer = setTimeout(() => void tick().finally(schedule), ms);
    timer.unref();
  };

  async function tick(): Promise<void> {
    const settings = config();
    if (settings === undefined || settings.reconcile_interval_seconds === 0) return;
    try {
      const now = Date.now();
      if (!(await store.payments.takeLease(LEASE, holder, new Date(now + settings.reconcile_interval_seconds * 2000)))) return;
      const summary = await payments.reconcile({ before: new Date(now - settings.pending_expiry_minutes * 60_000), expire: true });
      if (summary.checked > 0) logger.info({ reconcile: summary }, 'payments: pending orders looked up in Stripe');
      if (summary.errors.length > 0) logger.warn({ errors: summary.errors }, 'payments: some pending orders could not be looked up; they stay pending until the next run');
    } catch (err) {
      logger.error({ err }, 'payments: the reconcile job failed; it runs again at the next interval');
    }
  }

  schedule();
  return {
    stop() {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
    },
  };
}
