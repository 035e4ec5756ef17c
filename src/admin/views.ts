/**
 * The JSON shapes of the management API (schemas/management-api.yaml): snake_case fields, money as
 * decimal strings of balance units (never JSON numbers, which would round), times as ISO strings.
 */
import { keyStatus } from '../auth/issue-key';
import { isPlaygroundKey } from '../auth/playground-key';
import { formatUnits } from '../billing/money';
import type { Account, AccountSummary, AlertRecord, ApiKeyRecord, Budget, BudgetCheck, ChargeRecord, KeyActivity, CreditRecord, OperatorLimits, RedemptionCodeRecord, ServiceLevel, SessionRecord } from '../store/store';
import type { AuditRecord } from '../store/audit';
import type { PaymentDebit } from '../store/payments';
import type { RefusalRecord } from '../store/refusals';
import { TOKEN_COLUMNS } from '../store/rows';
import { TOKEN_KINDS } from '../protocols/types';

const iso = (date: Date | null): string | null => (date === null ? null : date.toISOString());

export function accountView(account: Account) {
  return {
    id: account.id,
    name: account.name,
    email: account.email,
    role: account.role,
    disabled: account.disabled,
    created_at: iso(account.createdAt),
    budget: budgetView(account.budget),
    session_budget: account.sessionBudget === null ? null : formatUnits(account.sessionBudget),
  };
}

/** A budget with its spend in the current period, for the console's bars. */
export function budgetSpendView(check: BudgetCheck, name: string | null, roleDefault: boolean, spent: bigint) {
  return {
    scope: check.scope,
    id: check.id,
    name,
    role_default: roleDefault,
    amount: formatUnits(check.amount),
    period: check.period,
    timezone: check.timezone,
    spent: formatUnits(spent),
    period_start: iso(check.start),
    resets_at: iso(check.end),
  };
}

/** An alert as fired, with the event its webhook delivery carries. */
export function alertView(alert: AlertRecord) {
  return {
    id: alert.id,
    kind: alert.kind,
    created_at: iso(alert.createdAt),
    delivered_at: iso(alert.deliveredAt),
    attempts: alert.attempts,
    event: JSON.parse(alert.body) as Record<string, unknown>,
  };
}

/** A budget as the API shows it: the amount in units, as a decimal string. */
export function budgetView(budget: Budget | null) {
  return budget === null ? null : { amount: formatUnits(budget.amount), period: budget.period, timezone: budget.timezone };
}

export function accountSummaryView(account: AccountSummary) {
  return { ...accountView(account), balance: formatUnits(account.balance), held: formatUnits(account.held) };
}

export function keyView(key: ApiKeyRecord, now = Date.now()) {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    last4: key.last4,
    status: keyStatus(key, now),
    created_at: iso(key.createdAt),
    expires_at: iso(key.expiresAt),
    revoked_at: iso(key.revokedAt),
    spend_limit: key.spendLimit === null ? null : formatUnits(key.spendLimit),
    spent: formatUnits(key.spent),
    models: key.models,
    rate_limits: key.rateLimits,
    budget: budgetView(key.budget),
    session_budget: key.sessionBudget === null ? null : formatUnits(key.sessionBudget),
    allowed_networks: key.allowedNetworks,
    operator_limits: operatorLimitsView(key.operatorLimits),
    // The console playground's own key (src/auth/playground-key.ts): the Tokens page leaves it out.
    playground: isPlaygroundKey(key),
  };
}

/** The limits an operator set on a key (the owner cannot loosen them); null when none. */
function operatorLimitsView(limits: OperatorLimits | null) {
  if (limits === null) return null;
  return {
    spend_limit: limits.spendLimit === undefined ? null : formatUnits(limits.spendLimit),
    models: limits.models ?? null,
    rate_limits: limits.rateLimits ?? null,
    allowed_networks: limits.allowedNetworks ?? null,
    budget: budgetView(limits.budget ?? null),
    session_budget: limits.sessionBudget === undefined ? null : formatUnits(limits.sessionBudget),
  };
}

/** A key's last use and its spend today and this month (UTC), for the Tokens page. */
export function activityView(activity: KeyActivity | undefined) {
  return {
    last_used_at: iso(activity?.lastUsedAt ?? null),
    spent_today: formatUnits(activity?.spentToday ?? 0n),
    spent_month: formatUnits(activity?.spentMonth ?? 0n),
  };
}

export function creditView(credit: CreditRecord) {
  return {
    id: credit.id,
    amount: formatUnits(credit.amount),
    kind: credit.kind,
    actor: credit.actor,
    note: credit.note,
    created_at: iso(credit.createdAt),
  };
}

/** A debit: a card payment's refund or dispute (with its order), or an administrator's adjustment. */
export function debitView(debit: PaymentDebit) {
  return {
    id: debit.id,
    account_id: debit.accountId,
    order_id: debit.orderId,
    kind: debit.kind,
    amount: formatUnits(debit.amount),
    actor: debit.actor,
    note: debit.note,
    created_at: iso(debit.createdAt),
  };
}

/** The usage field of each part of a charge's service level: a new kind of premium does not compile until it is shown. */
const SERVICE_LEVEL_FIELDS = { serviceTier: 'service_tier', longContext: 'long_context' } as const satisfies Record<keyof ServiceLevel, string>;
type ServiceLevelField = (typeof SERVICE_LEVEL_FIELDS)[keyof ServiceLevel];

/** Fields of a usage row, in the order of the CSV export's columns. */
export const USAGE_FIELDS = [
  'created_at',
  'request_id',
  'account_id',
  'key_id',
  'key_name',
  'model',
  'provider',
  'endpoint',
  'input_tokens',
  'cache_write_tokens',
  'cache_write_1h_tokens',
  'cache_read_tokens',
  'output_tokens',
  'image_input_tokens',
  'image_output_tokens',
  'images',
  'tool_calls',
  'cost',
  'overage',
  'unbilled',
  ...(Object.values(SERVICE_LEVEL_FIELDS) as ServiceLevelField[]),
  'usage_source',
  'status',
  'outcome',
  'latency_ms',
  'client_request_id',
  'reason',
  'refused_by',
  'count',
] as const;

export type UsageView = Record<(typeof USAGE_FIELDS)[number], string | number | boolean | null>;

export function usageView(charge: ChargeRecord, keyNames: ReadonlyMap<string, string | null>): UsageView {
  return {
    created_at: iso(charge.createdAt),
    request_id: charge.requestId,
    account_id: charge.accountId,
    key_id: charge.keyId,
    key_name: keyNames.get(charge.keyId) ?? null,
    model: charge.model,
    provider: charge.provider,
    endpoint: charge.endpoint,
    input_tokens: charge.inputTokens,
    cache_write_tokens: charge.cacheWriteTokens,
    cache_write_1h_tokens: charge.cacheWrite1hTokens,
    cache_read_tokens: charge.cacheReadTokens,
    output_tokens: charge.outputTokens,
    image_input_tokens: charge.imageInputTokens,
    image_output_tokens: charge.imageOutputTokens,
    images: charge.images ?? 0,
    tool_calls: toolCallsText(charge.toolCalls),
    cost: formatUnits(charge.cost),
    overage: formatUnits(charge.overage),
    unbilled: formatUnits(charge.unbilled),
    ...serviceLevelView(charge),
    usage_source: charge.usageSource,
    status: charge.status,
    outcome: charge.outcome,
    latency_ms: charge.latencyMs,
    client_request_id: charge.clientRequestId,
    reason: null,
    refused_by: null,
    count: 1,
  };
}

/**
 * A refused request as a usage row: nothing held, nothing charged, no provider tried; `reason` is the
 * code it was refused with, `refused_by` what refused it, `count` how many requests the row stands for.
 */
export function refusalUsageView(refusal: RefusalRecord, keyNames: ReadonlyMap<string, string | null>): UsageView {
  return {
    created_at: iso(refusal.createdAt),
    request_id: refusal.id,
    account_id: refusal.accountId,
    key_id: refusal.keyId,
    key_name: refusal.keyId === null ? null : (keyNames.get(refusal.keyId) ?? null),
    model: refusal.model,
    provider: null,
    endpoint: refusal.endpoint,
    ...Object.fromEntries(TOKEN_KINDS.map((kind) => [TOKEN_COLUMNS[kind], 0])),
    images: 0,
    tool_calls: '',
    cost: '0',
    overage: '0',
    unbilled: '0',
    ...serviceLevelView({ serviceTier: null, longContext: false }),
    usage_source: 'none',
    status: refusal.status,
    outcome: 'refused',
    latency_ms: null,
    client_request_id: null,
    reason: refusal.code,
    refused_by: refusal.level,
    count: refusal.count,
  } as UsageView;
}

function serviceLevelView(level: ServiceLevel): Record<ServiceLevelField, string | boolean | null> {
  const parts = Object.keys(SERVICE_LEVEL_FIELDS) as (keyof ServiceLevel)[];
  return Object.fromEntries(parts.map((part) => [SERVICE_LEVEL_FIELDS[part], level[part]])) as Record<ServiceLevelField, string | boolean | null>;
}

/** Server-tool calls as one cell, `web_search=2 web_fetch=1`; '' when none. */
function toolCallsText(calls: Readonly<Record<string, number>>): string {
  return Object.entries(calls)
    .map(([tool, count]) => `${tool}=${count}`)
    .join(' ');
}

type CodeStatus = 'unused' | 'redeemed' | 'expired';

function codeStatus(code: RedemptionCodeRecord, now = Date.now()): CodeStatus {
  if (code.redeemedAt !== null) return 'redeemed';
  if (code.expiresAt !== null && code.expiresAt.getTime() <= now) return 'expired';
  return 'unused';
}

export const CODE_FIELDS = ['id', 'amount', 'status', 'created_at', 'created_by', 'expires_at', 'redeemed_by', 'redeemed_at'] as const;

export function codeView(code: RedemptionCodeRecord, now = Date.now()): Record<(typeof CODE_FIELDS)[number], string | null> {
  return {
    id: code.id,
    amount: formatUnits(code.amount),
    status: codeStatus(code, now),
    created_at: iso(code.createdAt),
    created_by: code.createdBy,
    expires_at: iso(code.expiresAt),
    redeemed_by: code.redeemedBy,
    redeemed_at: iso(code.redeemedAt),
  };
}

export function tokenView(token: SessionRecord) {
  return {
    id: token.id,
    name: token.name,
    created_at: iso(token.createdAt),
    expires_at: iso(token.expiresAt),
    last_used_at: iso(token.lastUsedAt),
  };
}

/** A console session as the Account page lists it; `current` marks the one making the request. */
export function sessionView(session: SessionRecord, currentId: string) {
  return {
    id: session.id,
    created_at: iso(session.createdAt),
    expires_at: iso(session.expiresAt),
    last_used_at: iso(session.lastUsedAt),
    user_agent: session.userAgent,
    current: session.id === currentId,
  };
}

export const AUDIT_FIELDS = ['id', 'at', 'actor', 'surface', 'action', 'target', 'account_id', 'before', 'after', 'request_id'] as const;

/** An audit entry; before and after stay JSON objects here and become JSON text in a CSV cell. */
export function auditView(entry: AuditRecord) {
  return {
    id: entry.id,
    at: entry.at.toISOString(),
    actor: entry.actor,
    surface: entry.surface,
    action: entry.action,
    target: entry.target,
    account_id: entry.accountId,
    before: entry.before,
    after: entry.after,
    request_id: entry.requestId,
  };
}

/** One CSV row of an audit entry. */
export function auditCsvRow(entry: AuditRecord): Record<(typeof AUDIT_FIELDS)[number], string | null> {
  const view = auditView(entry);
  return { ...view, before: view.before === null ? null : JSON.stringify(view.before), after: view.after === null ? null : JSON.stringify(view.after) };
}
