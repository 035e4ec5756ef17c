/**
 * What runs beside the requests on a timer: expired holds released (their instance died), and the
 * drift check that keeps tollgate_ledger_drift_units current for a book with a live copy (Redis).
 */
import type { Logger } from 'pino';
import type { LedgerMetrics } from '../metrics/ledger-metrics';
import type { Store } from '../store/store';
import type { BalanceBook } from './book';

export function startSweeper(book: BalanceBook, logger: Logger, intervalMs: number): NodeJS.Timeout {
  const sweeper = setInterval(() => {
    book.releaseExpired(new Date()).then(
      (released) => released > 0 && logger.warn({ released }, 'billing: released expired holds'),
      (error: unknown) => logger.warn({ err: error }, 'billing: sweeping expired holds failed'),
    );
  }, intervalMs);
  sweeper.unref();
  return sweeper;
}

/**
 * Every `intervalMs`, the live copy's balances are compared with the ledger. Null when there is
 * nothing to compare (no live copy) or it is off.
 */
export function startDriftCheck(book: BalanceBook, store: Store, metrics: LedgerMetrics, logger: Logger, intervalMs: number): NodeJS.Timeout | null {
  const live = book.liveCopy;
  if (live === null || intervalMs === 0) return null;
  const check = async (): Promise<void> => {
    const drifts = await live.drift(await store.ledgerTotals());
    metrics.recordDrift(new Map(drifts.map((drift) => [drift.accountId, drift.live - drift.ledger])));
    if (drifts.length > 0) {
      logger.error({ accounts: drifts.map((drift) => drift.accountId) }, 'ledger: live balances differ from the ledger; tollgate ledger verify names them, tollgate ledger heal rebuilds them');
    }
  };
  const timer = setInterval(() => {
    check().catch((error: unknown) => logger.warn({ err: error }, 'ledger: the drift check failed'));
  }, intervalMs);
  timer.unref();
  return timer;
}
