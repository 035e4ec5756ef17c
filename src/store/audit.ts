/**
 * The audit log's records: who changed what, when, through which surface. Append-only; both stores
 * keep it in an `audit` table. Nothing secret is ever written here: no password or its hash, no key,
 * token or redemption code text, only ids, names, amounts and settings.
 */

/** Where an action came from: the console (a cookie session), the API (a management token), the CLI, or the server itself (a config reload). */
type AuditSurface = 'console' | 'api' | 'cli' | 'server';

/** Every action the log records, one word per kind of change. */
export type AuditAction =
  | 'account.create'
  | 'account.signup'
  | 'account.disable'
  | 'account.enable'
  | 'account.credit'
  | 'account.debit'
  | 'account.password'
  | 'account.budget'
  | 'budget.alert'
  | 'account.sessions_end'
  | 'account.2fa'
  | 'code.create'
  | 'code.redeem'
  | 'key.create'
  | 'key.revoke'
  | 'key.limits'
  | 'token.create'
  | 'token.revoke'
  | 'config.reload'
  | 'payment.create'
  | 'payment.paid'
  | 'payment.failed'
  | 'payment.expired'
  | 'payment.refund'
  | 'payment.dispute'
  | 'payment.settings'
  | 'org.create'
  | 'org.invite'
  | 'org.invitation_revoke'
  | 'org.join'
  | 'org.role'
  | 'org.remove'
  | 'org.member_limits'
  | 'account.transfer'
  | 'account.limits';

/** A JSON object of plain values: what the changed thing looked like before or after. */
export type AuditState = Readonly<Record<string, unknown>>;

export interface NewAuditEntry {
  /** An account name, `cli:<user>`, or what the server acted on (`SIGHUP`). */
  readonly actor: string;
  readonly surface: AuditSurface;
  readonly action: AuditAction;
  /** The id of what changed: `acc_…`, `key_…`, `ses_…`, a config file; null when no one thing did. */
  readonly target: string | null;
  /** The account the change belongs to, when there is one (a key's owner, the credited account). */
  readonly accountId: string | null;
  readonly before: AuditState | null;
  readonly after: AuditState | null;
  /** The `x-request-id` of the API call; null from the CLI and the server. */
  readonly requestId: string | null;
}

export interface AuditRecord extends NewAuditEntry {
  readonly id: string;
  readonly at: Date;
}

export interface AuditFilter {
  /** Exactly this actor. */
  readonly actor?: string;
  /** Entries whose target, or whose account, is this id. */
  readonly target?: string;
  readonly action?: AuditAction;
  readonly since?: Date;
  /** Exclusive. */
  readonly until?: Date;
  /** Newest first; at most this many (default 100). */
  readonly limit?: number;
}

export const AUDIT_ACTIONS: readonly AuditAction[] = [
  'account.create',
  'account.signup',
  'account.disable',
  'account.enable',
  'account.credit',
  'account.debit',
  'account.password',
  'account.budget',
  'budget.alert',
  'code.create',
  'code.redeem',
  'key.create',
  'key.revoke',
  'key.limits',
  'token.create',
  'token.revoke',
  'config.reload',
  'payment.create',
  'payment.paid',
  'payment.failed',
  'payment.expired',
  'payment.refund',
  'payment.dispute',
  'payment.settings',
  'account.transfer',
];

/** Row as both stores return it: JSON as text, the time in the backend's date type. */
export interface AuditRow<D> {
  id: string;
  at: D;
  actor: string;
  surface: AuditSurface;
  action: AuditAction;
  target: string | null;
  account_id: string | null;
  before: string | null;
  after: string | null;
  request_id: string | null;
}

export function toAuditRecord<D>(row: AuditRow<D>, date: (value: D) => Date): AuditRecord {
  return {
    id: row.id,
    at: date(row.at),
    actor: row.actor,
    surface: row.surface,
    action: row.action,
    target: row.target,
    accountId: row.account_id,
    before: row.before === null ? null : (JSON.parse(row.before) as AuditState),
    after: row.after === null ? null : (JSON.parse(row.after) as AuditState),
    requestId: row.request_id,
  };
}

export const DEFAULT_AUDIT_LIMIT = 100;
