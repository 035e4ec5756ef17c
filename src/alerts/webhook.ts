/**
 * Delivers alerts to the operator's webhook: a JSON POST signed with HMAC-SHA256 over the timestamp
 * and the body (`x-tollgate-signature: t=<unix seconds>,v1=<hex>`), the event id in
 * `x-tollgate-event-id` for deduplication. At least once: an attempt that gets no 2xx in time is
 * retried with doubling backoff, and each attempt is counted in the store, so alerts a stopped process
 * left undelivered are sent again by the next one. Nothing here is ever awaited by a request.
 */
import { createHmac } from 'node:crypto';
import type { Logger } from 'pino';
import type { AlertRecord, AuditStore } from '../store/audit-store';

export interface WebhookSettings {
  readonly url: string;
  readonly secret: string;
  readonly timeout_ms: number;
  readonly max_attempts: number;
}

const FIRST_RETRY_MS = 1000;
const LONGEST_RETRY_MS = 5 * 60 * 1000;
/** Undelivered alerts older than this are not resumed at start: their moment has passed. */
const RESUME_WITHIN_MS = 24 * 60 * 60 * 1000;

/** The signature header's value for `body` sent at `unixSeconds`. */
function signature(secret: string, unixSeconds: number, body: string): string {
  const digest = createHmac('sha256', secret).update(`${unixSeconds}.${body}`).digest('hex');
  return `t=${unixSeconds},v1=${digest}`;
}

/** How long before attempt `next` (2, 3, …): 1 s, 2 s, 4 s … up to 5 minutes. */
function retryDelayMs(next: number): number {
  return Math.min(LONGEST_RETRY_MS, FIRST_RETRY_MS * 2 ** (next - 2));
}

type Deliverable = Pick<AlertRecord, 'id' | 'body' | 'attempts'>;

export class AlertWebhook {
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Set<AbortController>();
  private closed = false;

  constructor(
    private readonly settings: WebhookSettings,
    private readonly store: AuditStore,
    private readonly logger: Logger,
  ) {}

  /** Starts delivering `alert` in the background. */
  send(alert: Deliverable): void {
    void this.attempt(alert, alert.attempts + 1);
  }

  /** Sends again what a previous process recorded but did not deliver (recent ones only). */
  async resume(now = new Date()): Promise<void> {
    const pending = await this.store.listAlerts({ undelivered: true, limit: 100 });
    for (const alert of pending) {
      if (now.getTime() - alert.createdAt.getTime() < RESUME_WITHIN_MS && alert.attempts < this.settings.max_attempts) this.send(alert);
    }
  }

  close(): void {
    this.closed = true;
    for (const timer of this.timers) clearTimeout(timer);
    for (const controller of this.inFlight) controller.abort();
  }

  private async attempt(alert: Deliverable, number: number): Promise<void> {
    if (this.closed) return;
    const delivered = await this.post(alert);
    await this.store.alertAttempted(alert.id, delivered, new Date()).catch((error: unknown) => this.logger.warn({ err: error, alert: alert.id }, 'alerts: recording a delivery attempt failed'));
    if (delivered || this.closed) return;
    if (number >= this.settings.max_attempts) {
      this.logger.error({ alert: alert.id, attempts: number }, 'alerts: the webhook did not take the alert; giving up');
      return;
    }
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void this.attempt(alert, number + 1);
    }, retryDelayMs(number + 1));
    timer.unref();
    this.timers.add(timer);
  }

  private async post(alert: Deliverable): Promise<boolean> {
    const controller = new AbortController();
    this.inFlight.add(controller);
    const timeout = setTimeout(() => controller.abort(), this.settings.timeout_ms);
    try {
      const response = await fetch(this.settings.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Tollgate-Alerts',
          'x-tollgate-event-id': alert.id,
          'x-tollgate-signature': signature(this.settings.secret, Math.floor(Date.now() / 1000), alert.body),
        },
        body: alert.body,
        signal: controller.signal,
      });
      await response.arrayBuffer().catch(() => undefined);
      if (!response.ok) this.logger.warn({ alert: alert.id, status: response.status }, 'alerts: the webhook refused an alert; retrying');
      return response.ok;
    } catch (error) {
      if (!this.closed) this.logger.warn({ err: error, alert: alert.id }, 'alerts: the webhook could not be reached; retrying');
      return false;
    } finally {
      clearTimeout(timeout);
      this.inFlight.delete(controller);
    }
  }
}
