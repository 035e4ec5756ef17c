/**
 * What happened, kept to be read later: the audit log (audit.ts) and the alerts fired (budget,
 * balance) with their webhook deliveries.
 */
import type { AuditFilter, AuditRecord, NewAuditEntry } from './audit';

/** An alert as fired: `once` names what it is about, so racing instances record it once. */
export interface NewAlert {
  /** The event id receivers deduplicate by. */
  readonly id: string;
  readonly once: string;
  readonly accountId: string;
  readonly keyId: string | null;
  readonly kind: 'budget' | 'balance';
  /** The webhook's JSON body, as delivered. */
  readonly body: string;
  readonly createdAt: Date;
}

export interface AlertRecord extends NewAlert {
  readonly deliveredAt: Date | null;
  /** Delivery attempts made so far. */
  readonly attempts: number;
}

export interface AuditStore {
  /** Appends one entry to the audit log (store/audit.ts); never anything secret. */
  appendAudit(entry: NewAuditEntry): Promise<AuditRecord>;
  /** Audit entries matching `filter`, newest first. */
  listAudit(filter: AuditFilter): Promise<AuditRecord[]>;

  /** Records an alert unless one with the same `once` exists; true when this call recorded it. */
  recordAlert(alert: NewAlert): Promise<boolean>;
  /** Alerts, newest first: of one account, or every account's; only those not delivered yet when asked. */
  listAlerts(filter: { accountId?: string; undelivered?: boolean; limit?: number }): Promise<AlertRecord[]>;
  /** Counts one delivery attempt of an alert, and marks it delivered when it was. */
  alertAttempted(id: string, delivered: boolean, at: Date): Promise<void>;
}
