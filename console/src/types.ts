// Shapes of the management API (/api), as fixed by the API contract.
// Money is always a decimal string; times are ISO-8601 strings or null.

type Role = 'admin' | 'user';

export interface Account {
  id: string;
  name: string;
  email: string | null;
  role: Role;
  disabled: boolean;
  created_at: string;
  /** Its own budget; null when it has none (it may still have its role's default). */
  budget: Budget | null;
}

export interface AdminAccount extends Account {
  balance: string;
  held: string;
  /** The account's newest request; null when it never made one. */
  last_request_at: string | null;
}

export interface SessionResponse {
  account: Account;
  csrf_token: string;
  /** At login: the account must enrol a second factor before anything else. */
  enrol_2fa?: boolean;
}

export interface TwoFactorState {
  enabled: boolean;
  recovery_codes_left: number;
  required: boolean;
}

export interface TwoFactorEnrolment {
  secret: string;
  uri: string;
  qr: { size: number; modules: string };
}

export interface ConsoleSession {
  id: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  user_agent: string | null;
  current: boolean;
}

export interface Meta {
  signup: boolean;
  version: string;
}

export interface ModelPrice {
  input: string;
  cache_write: string;
  cache_hit: string;
  output: string;
  image_input: string;
  image_output: string;
  /** A per-image model's price of one image by "size/quality"; empty otherwise. */
  per_image: Record<string, string>;
}

export interface PricedModel {
  model: string;
  family: 'anthropic' | 'openai';
  kind: 'text' | 'image';
  free: boolean;
  /** False when none of the model's providers has credentials: it cannot answer, so it is not offered. */
  available: boolean;
  price: ModelPrice | null;
  max_output_tokens: number;
  description: string | null;
}

export interface AccountSummary {
  account: Account;
  balance: string;
  held: string;
  available: string;
  today: { requests: number; cost: string };
}

export interface DailyUsage {
  day: string;
  requests: number;
  cost: string;
}

export interface RateLimits {
  rpm?: number;
  tpm?: number;
  concurrency?: number;
}

export type KeyStatus = 'active' | 'revoked' | 'expired';

export interface ApiKey {
  id: string;
  name: string | null;
  prefix: string;
  last4: string;
  status: KeyStatus;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  spend_limit: string | null;
  spent: string;
  models: string[] | null;
  rate_limits: RateLimits | null;
  /** In the key list only: its latest charge, and its spend today and this month (UTC). */
  last_used_at?: string | null;
  spent_today?: string;
  spent_month?: string;
  allowed_networks: string[] | null;
  operator_limits: OperatorLimits | null;
  budget: Budget | null;
  /** The Playground's own key: left out of the Tokens page. */
  playground: boolean;
  /** An organisation's key only: the member it is charged to, null once they have left. */
  member_name?: string | null;
}

/** What an operator set on a key: the owner can tighten it, never loosen it. */
export interface OperatorLimits {
  spend_limit: string | null;
  models: string[] | null;
  rate_limits: RateLimits | null;
  allowed_networks: string[] | null;
  budget: Budget | null;
}

export interface Credit {
  id: string;
  amount: string;
  kind: 'topup' | 'redemption' | 'admin' | 'dispute_won';
  actor: string | null;
  note: string | null;
  created_at: string;
}

export interface Usage {
  request_id: string;
  created_at: string;
  /** Null for a request refused before any key was known (a 401). */
  key_id: string | null;
  key_name: string | null;
  model: string | null;
  provider: string | null;
  endpoint: string;
  input_tokens: number;
  cache_write_tokens: number;
  cache_write_1h_tokens: number;
  cache_read_tokens: number;
  output_tokens: number;
  /** Image tokens, at the image prices (an image model's, or the Responses image_generation tool's). */
  image_input_tokens: number;
  image_output_tokens: number;
  /** Images the reply delivered (POST /v1/images/generations). */
  images: number;
  tool_calls: string;
  cost: string;
  overage: string;
  unbilled: string;
  /** The service tier the reply reported; null when it named none. */
  service_tier: string | null;
  /** Whether every token was charged at the model's long-context rates. */
  long_context: boolean;
  usage_source: 'upstream' | 'estimated' | 'partial' | 'none';
  status: number;
  outcome: 'delivered' | 'aborted' | 'failed' | 'refused';
  latency_ms: number | null;
  client_request_id: string | null;
  /** A refused request's code (`TOLLGATE_ERR_…`); null for a charged one. */
  reason: string | null;
  /** What refused it: `budget:key:month`, `key`, `account`… */
  refused_by: string | null;
  /** Requests the row stands for (refusals of one source past its share of a minute are folded). */
  count: number;
}

/** One page of GET /api/usage, with totals over every matching row. */
export interface UsagePage {
  usage: Usage[];
  next_cursor: string | null;
  totals: { requests: number; cost: string; failed: number; refused: number };
}

/** Refused requests of a range, by reason (GET /api/usage/refusals). */
export interface RefusalReason {
  status: number;
  reason: string;
  refused_by: string | null;
  requests: number;
  last_at: string;
}

export interface ManagementToken {
  id: string;
  name: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
}

export interface RedemptionCode {
  id: string;
  amount: string;
  status: 'unused' | 'redeemed' | 'expired';
  created_at: string;
  created_by: string | null;
  expires_at: string | null;
  redeemed_by: string | null;
  /** The redeeming account's name now. */
  redeemed_by_name?: string | null;
  redeemed_at: string | null;
}

/** A freshly generated code: the only time its text is ever returned. */
export interface NewRedemptionCode {
  id: string;
  code: string;
  amount: string;
  expires_at: string | null;
}

export interface ProviderHealth {
  name: string;
  protocol: string;
  /** False without the key or credential source its protocol needs: its breaker state says nothing. */
  configured: boolean;
  breaker: 'closed' | 'open' | 'half_open';
  window_seconds: number;
  requests: number;
  failures: number;
  error_rate: number;
}

export interface AuditEntry {
  id: string;
  at: string;
  actor: string;
  surface: 'console' | 'api' | 'cli' | 'server';
  action: string;
  target: string | null;
  account_id: string | null;
  /** The name of `account_id`'s account now; null when none or deleted. */
  account_name: string | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  request_id: string | null;
}

/** One group of GET /api/usage/summary (and one session of /api/usage/sessions). */
export interface UsageGroup {
  group: string | null;
  label: string | null;
  requests: number;
  errors: number;
  cost: string;
  input_tokens: number;
  cache_write_tokens: number;
  cache_write_1h_tokens: number;
  cache_read_tokens: number;
  output_tokens: number;
  image_input_tokens: number;
  image_output_tokens: number;
  cache_hit_ratio: number | null;
  first_at: string;
  last_at: string;
  models: string | null;
  /** An administrator's rows only: what the charges of known cost cost upstream, how many had none, and the margin on them. */
  upstream_cost?: string;
  uncosted_requests?: number;
  margin?: string;
}

export type UsageGrouping = 'model' | 'key' | 'day' | 'session' | 'account' | 'provider' | 'member';

export interface UsageSummary {
  group_by: UsageGrouping;
  since: string;
  until: string;
  rows: UsageGroup[];
}

/** GET /api/usage/requests/{id}: one request in full. */
export interface UsageRequest extends Usage {
  account_id: string;
  held: string;
  requested_model: string | null;
  served_model: string | null;
  attempts: { provider: string; outcome: string; duration_ms: number }[];
  ttfb_ms: number | null;
  session_id: string | null;
  user_agent: string | null;
  origin: string | null;
  priced: boolean;
  lines: { kind: string; tokens: number; price_per_million: string; cost: string }[];
  tool_lines: { tool: string; calls: number; price_per_thousand: string; cost: string }[];
  /** A per-image model's images at the price of the size and quality charged; empty otherwise. */
  image_lines: { size_quality: string; images: number; price_per_image: string; cost: string }[];
  cache_hit_ratio: number | null;
}

/** One card payment order (GET /api/payments). */
export interface Payment {
  id: string;
  account_id: string;
  /** On the administrators' list: the account's name now. */
  account_name?: string | null;
  kind: 'checkout' | 'auto_recharge';
  status: 'pending' | 'paid' | 'failed' | 'expired';
  currency: string;
  amount_minor: number;
  amount: string;
  credit: string;
  refunded: string;
  disputed: boolean;
  receipt_url: string | null;
  error: string | null;
  created_at: string;
  updated_at: string;
}

/** GET /api/admin/money: decimal strings of the range (and of now, for the balances). */
export interface MoneyTotals {
  since: string;
  until: string;
  requests: number;
  usage_charged: string;
  card_payments: string;
  refunds: string;
  disputes: string;
  disputes_won: string;
  received: string;
  admin_credits: string;
  redemptions: string;
  adjustments: string;
  outstanding: string;
  owed_by_accounts: string;
}

export interface PaymentDebit {
  id: string;
  account_id: string;
  /** Null for an administrator's adjustment. */
  order_id: string | null;
  /** On the administrators' list: the account's name now. */
  account_name?: string | null;
  kind: 'refund' | 'dispute' | 'adjustment';
  amount: string;
  actor: string;
  note: string | null;
  created_at: string;
}

interface PaymentAmount {
  amount_minor: number;
  amount: string;
  credit: string;
}

export interface PaymentOptions {
  enabled: boolean;
  currency?: string;
  min?: PaymentAmount;
  max?: PaymentAmount;
  presets?: PaymentAmount[];
  units_per_currency_unit?: string;
}

export interface AutoRechargeSettings {
  enabled: boolean;
  threshold: string;
  amount_minor: number;
  amount: string;
  monthly_cap_minor: number;
  monthly_cap: string;
  card_saved: boolean;
  failures: number;
  last_error: string | null;
  needs_action: boolean;
  flagged: boolean;
}

export interface Budget {
  amount: string;
  period: 'day' | 'week' | 'month';
  timezone: string;
}

/** A budget with what it has spent in its current period (GET /api/budgets). */
export interface BudgetSpend extends Budget {
  scope: 'account' | 'key';
  id: string;
  name: string | null;
  role_default: boolean;
  spent: string;
  period_start: string;
  resets_at: string;
}

export interface BudgetAlert {
  id: string;
  kind: 'budget' | 'balance';
  created_at: string;
  delivered_at: string | null;
  attempts: number;
  event: {
    type: string;
    threshold_percent?: number;
    /** The budget refused a request: it blocks until `resets_at`. */
    blocked?: boolean;
    account_id?: string;
    key_id?: string | null;
    spent?: string;
    resets_at?: string;
    balance?: string;
    low_balance?: string;
    budget?: Budget & { scope: 'account' | 'key' };
  };
}

/** An organisation one belongs to (GET /api/orgs), with one's role; an administrator's list adds the member count. */
export interface Organisation {
  id: string;
  name: string;
  created_at: string;
  disabled: boolean;
  role: MemberRole | null;
  balance: string | null;
  held: string | null;
  members?: number;
}

export type MemberRole = 'owner' | 'admin' | 'billing' | 'member';

/** What an owner or admin set for one member; null for another member's, unless one may manage them. */
interface MemberLimits {
  budget: Budget | null;
  models: string[] | null;
  rate_limits: RateLimits | null;
}

export interface Member {
  account_id: string;
  name: string;
  email: string | null;
  role: MemberRole;
  created_at: string;
  limits: MemberLimits | null;
  /** What the member spent in their budget's current period; null without a budget or where limits are hidden. */
  budget_spent?: { spent: string; period_start: string; resets_at: string } | null;
}

export interface Invitation {
  id: string;
  invitee: string;
  role: MemberRole;
  status: 'open' | 'accepted' | 'revoked' | 'expired';
  created_at: string;
  expires_at: string;
}

/** POST /api/orgs/{id}/invitations: the link's secret, shown this once. */
export interface NewInvitation {
  invitation: Invitation;
  secret: string;
  link: string;
}

/** An amount on a statement: exact (balance units, to the nano-unit) and as the statement prints it. */
interface StatementAmount {
  exact: string;
  shown: string;
}

/** One monthly statement in the account's list (GET /api/statements). */
export interface StatementSummary {
  id: string;
  number: string;
  /** The calendar month (UTC) covered: "2026-11". */
  month: string;
  issued_at: string;
  account_id: string;
  /** The currency at issue, upper case ("USD"). */
  currency: string;
  opening: StatementAmount;
  closing: StatementAmount;
}

/** A move of credit between two accounts (GET/POST /api/transfers). */
export interface Transfer {
  id: string;
  from_account_id: string;
  from_account_name: string | null;
  to_account_id: string;
  to_account_name: string | null;
  amount: string;
  actor: string | null;
  note: string | null;
  created_at: string;
}
