/**
 * Auto-recharge's trigger: it listens to every settled charge, and for an account with auto-recharge
 * on whose live balance the charge left under its threshold, starts one recharge (`Payments.recharge`).
 * The accounts to watch are kept in memory, read from the store now and then and at once when this
 * instance changes a setting, so a settle of any other account costs one map lookup. One check per
 * account at a time here; the store's pending-order check makes it one across instances.
 */
import type { Logger } from 'pino';
import type { Funds } from '../admin/funds';
import type { SettledCharges } from '../billing/settled';
import type { PaymentProfile } from '../store/payments';
import type { PaymentsStore } from '../store/payments-store';
import type { Payments } from './payments';

/** How often the watched accounts are read again: settings another instance changed show up by then. */
const REFRESH_MS = 30_000;

export class AutoRecharge {
  private watched = new Map<string, PaymentProfile>();
  private readonly checking = new Set<string>();
  private readonly running = new Set<Promise<unknown>>();
  private timer: NodeJS.Timeout | null = null;
  private unlisten: (() => void) | null = null;

  constructor(
    private readonly payments: Payments,
    private readonly store: PaymentsStore,
    private readonly funds: Pick<Funds, 'balance'>,
    private readonly logger: Logger,
  ) {}

  start(settled: SettledCharges): void {
    this.unlisten = settled.listen((charge) => this.settled(charge.accountId));
    const refresh = () => void this.refresh().catch((err: unknown) => this.logger.warn({ err }, 'payments: reading the auto-recharge accounts failed'));
    refresh();
    this.timer = setInterval(refresh, REFRESH_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.unlisten?.();
    if (this.timer !== null) clearInterval(this.timer);
    await Promise.allSettled([...this.running]);
  }

  /** Reads the accounts with auto-recharge on. */
  async refresh(): Promise<void> {
    if (!this.payments.enabled()) {
      this.watched = new Map();
      return;
    }
    const profiles = await this.store.payments.listAutoRecharge();
    this.watched = new Map(profiles.map((profile) => [profile.accountId, profile]));
  }

  /** A settle of `accountId` reached the live balance: check it unless it is not watched or already being checked. */
  settled(accountId: string): void {
    if (!this.watched.has(accountId) || this.checking.has(accountId) || !this.payments.enabled()) return;
    this.checking.add(accountId);
    const work = this.check(accountId)
      .catch((err: unknown) => this.logger.error({ err, account: accountId }, 'payments: an auto-recharge check failed'))
      .finally(() => {
        this.checking.delete(accountId);
        this.running.delete(work);
      });
    this.running.add(work);
  }

  /** Whether a check is under way (tests wait for them). */
  idle(): Promise<unknown> {
    return Promise.allSettled([...this.running]);
  }

  private async check(accountId: string): Promise<void> {
    // The settings as stored now: a failure or another instance may have changed them since the last read.
    const profile = await this.store.payments.profile(accountId);
    if (profile === null || !profile.autoRecharge) {
      this.watched.delete(accountId);
      return;
    }
    this.watched.set(accountId, profile);
    const { balance } = await this.funds.balance(accountId);
    if (balance >= profile.threshold) return;
    const outcome = await this.payments.recharge(profile);
    if (outcome !== 'in_flight') this.logger.info({ account: accountId, outcome }, 'payments: auto-recharge');
  }
}
