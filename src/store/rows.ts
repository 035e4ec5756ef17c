/**
 * The row shapes both stores read, and the mappers from rows to records. The two drivers hand back the
 * same columns in different types: SQLite stores dates as integer milliseconds, flags as 0/1 and a key's
 * models as JSON text; PostgreSQL returns TIMESTAMPTZ as Date, BOOLEAN as boolean and TEXT[] as an
 * array. Rows are typed by a `ColumnTypes` and the mappers take a `ColumnCodec` that decodes those
 * columns, so each mapping is written once.
 *
 * Money columns always arrive as strings (CAST(… AS TEXT) in SQLite, BIGINT in pg) and are turned
 * into bigints here, so no amount ever passes through a JS number.
 */
import { TOKEN_KINDS, type TokenCounts, type TokenKind, type ToolCalls } from '../protocols/types';
import type {
  Account,
  AccountRole,
  AccountSummary,
  ApiKeyRecord,
  ChargeAttempt,
  ChargeOrigin,
  Budget,
  BudgetPeriod,
  ChargePrices,
  ChargeRecord,
  CreditRecord,
  KeyIdentity,
  KeyRateLimits,
  OperatorLimits,
  LedgerTotals,
  RedemptionCodeRecord,
  SessionKind,
  SessionRecord,
} from './store';

/** The driver types of the columns whose representation differs between the backends. */
export interface ColumnTypes {
  date: unknown;
  flag: unknown;
  models: unknown;
}

export interface SqliteColumns extends ColumnTypes {
  date: number;
  flag: number;
  /** A JSON array of model ids. */
  models: string;
}

export interface PostgresColumns extends ColumnTypes {
  date: Date;
  flag: boolean;
  models: string[];
}

/** Turns one backend's column values into the types the records use. */
export interface ColumnCodec<T extends ColumnTypes> {
  date(value: T['date']): Date;
  flag(value: T['flag']): boolean;
  models(value: T['models']): string[];
}

export interface AccountRow<T extends ColumnTypes> {
  id: string;
  name: string;
  email: string | null;
  role: AccountRole;
  disabled: T['flag'];
  created_at: T['date'];
  /** JSON text of a budget (`budgetText`), in both stores. */
  budget: string | null;
  /** Nano-units as text (the stores cast it), or null. */
  session_budget: string | null;
}

export interface KeyRow<T extends ColumnTypes> {
  id: string;
  account_id: string;
  name: string | null;
  spend_limit: string | null;
  spent: string;
  models: T['models'] | null;
  /** JSON text of `KeyRateLimits` in both stores. */
  rate_limits: string | null;
  /** JSON text of a budget (`budgetText`), in both stores. */
  budget: string | null;
  /** Nano-units as text (the stores cast it), or null. */
  session_budget: string | null;
  /** JSON text of a CIDR list in both stores. */
  allowed_networks: string | null;
  /** JSON text of `OperatorLimits` (the spend limit as a decimal string) in both stores. */
  operator_limits: string | null;
  /** The member who made the key inside an organisation; null (or absent, before organisations): the account's own. */
  member_account_id?: string | null;
  prefix: string;
  last4: string;
  created_at: T['date'];
  revoked_at: T['date'] | null;
  expires_at: T['date'] | null;
}

/** An account's columns in a join, each prefixed `account_` (its id is the joined row's `account_id`). */
export interface JoinedAccountColumns<T extends ColumnTypes> {
  account_id: string;
  account_name: string;
  account_email: string | null;
  account_role: AccountRole;
  account_disabled: T['flag'];
  account_created_at: T['date'];
  account_budget: string | null;
  account_session_budget: string | null;
}

/** One row of the key + account join that authentication reads. */
export interface KeyIdentityRow<T extends ColumnTypes> extends KeyRow<T>, JoinedAccountColumns<T> {
  hash: Buffer;
  /** JSON `OperatorLimits` the operator set on the key's account; absent before organisations. */
  account_operator_limits?: string | null;
  /** The key's member's limits in the organisation (JSON, as memberships stores them); null: none, or no member. */
  member_models?: string | null;
  member_rate_limits?: string | null;
  member_budget?: string | null;
}

/** The charges column of each token kind: a new kind does not compile until it has one. */
export const TOKEN_COLUMNS = {
  inputTokens: 'input_tokens',
  cacheWriteTokens: 'cache_write_tokens',
  cacheWrite1hTokens: 'cache_write_1h_tokens',
  cacheReadTokens: 'cache_read_tokens',
  outputTokens: 'output_tokens',
  imageInputTokens: 'image_input_tokens',
  imageOutputTokens: 'image_output_tokens',
} as const satisfies Record<TokenKind, string>;

type TokenColumns = { [K in TokenKind as (typeof TOKEN_COLUMNS)[K]]: number };

export interface ChargeRow<T extends ColumnTypes> extends TokenColumns {
  request_id: string;
  client_request_id: string | null;
  account_id: string;
  key_id: string;
  model: string;
  provider: string | null;
  endpoint: string;
  /** JSON object of tool name → calls. */
  tool_calls: string;
  images: number;
  cost: string;
  held: string;
  overage: string;
  unbilled: string;
  /** Nano-units as text; null when the route's cost is unknown. */
  upstream_cost: string | null;
  /** JSON `ChargePrices`, or null for a free model. */
  prices: string | null;
  service_tier: string | null;
  long_context: T['flag'];
  usage_source: ChargeRecord['usageSource'];
  status: number;
  outcome: ChargeRecord['outcome'];
  latency_ms: number;
  created_at: T['date'];
  session_id: string | null;
  requested_model: string | null;
  served_model: string | null;
  /** JSON array of `ChargeAttempt`. */
  attempts: string;
  ttfb_ms: number | null;
  user_agent: string | null;
  origin: ChargeOrigin | null;
  /** The organisation's member the charge was made for; null for an account's own key. */
  member_account_id: string | null;
}

/** Money columns, read as text and written as bigints. */
type MoneyColumn = 'cost' | 'held' | 'overage' | 'unbilled';

/** A charge as insert parameters: like a `ChargeRow`, with amounts as bigints. */
export type ChargeParams<T extends ColumnTypes> = Omit<ChargeRow<T>, MoneyColumn | 'upstream_cost'> & Record<MoneyColumn, bigint> & { upstream_cost: bigint | null };

/** Every charges column, in the order inserts list them. */
export const CHARGE_COLUMNS = [
  'request_id', 'client_request_id', 'account_id', 'key_id', 'model', 'provider', 'endpoint',
  ...TOKEN_KINDS.map((kind) => TOKEN_COLUMNS[kind]),
  'tool_calls', 'images', 'cost', 'held', 'overage', 'unbilled', 'prices', 'service_tier', 'long_context', 'usage_source', 'status', 'outcome', 'latency_ms', 'created_at',
  'session_id', 'requested_model', 'served_model', 'attempts', 'ttfb_ms', 'user_agent', 'origin', 'upstream_cost', 'member_account_id',
] as const satisfies ReadonlyArray<keyof ChargeRow<ColumnTypes>>;

export interface CreditRow<T extends ColumnTypes> {
  id: string;
  account_id: string;
  amount: string;
  kind: CreditRecord['kind'];
  actor: string | null;
  note: string | null;
  created_at: T['date'];
}

/** An account row with its stored balance, money read as text. */
export interface AccountSummaryRow<T extends ColumnTypes> extends AccountRow<T> {
  balance: string;
  held: string;
}

export interface SessionRow<T extends ColumnTypes> {
  id: string;
  account_id: string;
  kind: SessionKind;
  name: string | null;
  created_at: T['date'];
  expires_at: T['date'] | null;
  last_used_at: T['date'] | null;
  user_agent: string | null;
}

/** One row of the session + account join that the console's authentication reads. */
export interface SessionAccountRow<T extends ColumnTypes> extends SessionRow<T>, JoinedAccountColumns<T> {}

export interface CodeRow<T extends ColumnTypes> {
  id: string;
  amount: string;
  created_at: T['date'];
  created_by: string | null;
  expires_at: T['date'] | null;
  redeemed_by: string | null;
  redeemed_at: T['date'] | null;
}

/** One account's ledger sums; no dates, so the same for both backends. */
export interface TotalsRow {
  account_id: string;
  name: string;
  credits: string;
  charges: string;
  debits: string;
  balance: string;
  held: string;
  holds: string;
}

/** A budget as its column stores it: JSON with the amount as a decimal string of nano-units. */
export function budgetText(budget: Budget | null): string | null {
  if (budget === null) return null;
  return JSON.stringify({ amount: String(budget.amount), period: budget.period, timezone: budget.timezone });
}

export function budgetOf(text: string | null): Budget | null {
  if (text === null) return null;
  const stored = JSON.parse(text) as { amount: string; period: BudgetPeriod; timezone: string };
  return { amount: BigInt(stored.amount), period: stored.period, timezone: stored.timezone };
}

interface OperatorLimitsJson {
  spend_limit?: string;
  models?: string[];
  rate_limits?: KeyRateLimits;
  allowed_networks?: string[];
  budget?: { amount: string; period: BudgetPeriod; timezone: string };
  session_budget?: string;
}

/** `OperatorLimits` as stored; null when it sets nothing. */
export function operatorLimitsToJson(limits: OperatorLimits | null | undefined): string | null {
  if (limits === null || limits === undefined) return null;
  const json: OperatorLimitsJson = {};
  if (limits.spendLimit !== undefined) json.spend_limit = String(limits.spendLimit);
  if (limits.models !== undefined) json.models = [...limits.models];
  if (limits.rateLimits !== undefined) json.rate_limits = limits.rateLimits;
  if (limits.allowedNetworks !== undefined) json.allowed_networks = [...limits.allowedNetworks];
  if (limits.budget !== undefined) json.budget = { amount: String(limits.budget.amount), period: limits.budget.period, timezone: limits.budget.timezone };
  if (limits.sessionBudget !== undefined) json.session_budget = String(limits.sessionBudget);
  return Object.keys(json).length === 0 ? null : JSON.stringify(json);
}

export function operatorLimitsFromJson(text: string): OperatorLimits {
  const json = JSON.parse(text) as OperatorLimitsJson;
  return {
    ...(json.spend_limit === undefined ? {} : { spendLimit: BigInt(json.spend_limit) }),
    ...(json.models === undefined ? {} : { models: json.models }),
    ...(json.rate_limits === undefined ? {} : { rateLimits: json.rate_limits }),
    ...(json.allowed_networks === undefined ? {} : { allowedNetworks: json.allowed_networks }),
    ...(json.budget === undefined ? {} : { budget: { amount: BigInt(json.budget.amount), period: json.budget.period, timezone: json.budget.timezone } }),
    ...(json.session_budget === undefined ? {} : { sessionBudget: BigInt(json.session_budget) }),
  };
}

/** A CIDR list as stored. */
export function networksToJson(networks: readonly string[] | null | undefined): string | null {
  return networks === null || networks === undefined ? null : JSON.stringify(networks);
}

/** Builds the row → record mappers for one backend. */
export function rowMappers<T extends ColumnTypes>(codec: ColumnCodec<T>) {
  const optionalDate = (value: T['date'] | null): Date | null => (value === null ? null : codec.date(value));

  const mappers = {
    toAccount(row: AccountRow<T>): Account {
      return {
        id: row.id,
        name: row.name,
        email: row.email,
        role: row.role,
        disabled: codec.flag(row.disabled),
        createdAt: codec.date(row.created_at),
        budget: budgetOf(row.budget),
        sessionBudget: row.session_budget === null ? null : BigInt(row.session_budget),
      };
    },

    toAccountSummary(row: AccountSummaryRow<T>): AccountSummary {
      return { ...mappers.toAccount(row), balance: BigInt(row.balance), held: BigInt(row.held) };
    },

    toSession(row: SessionRow<T>): SessionRecord {
      return {
        id: row.id,
        accountId: row.account_id,
        kind: row.kind,
        name: row.name,
        createdAt: codec.date(row.created_at),
        expiresAt: optionalDate(row.expires_at),
        lastUsedAt: optionalDate(row.last_used_at),
        userAgent: row.user_agent,
      };
    },

    toKeyRecord(row: KeyRow<T>): ApiKeyRecord {
      return {
        id: row.id,
        accountId: row.account_id,
        name: row.name,
        prefix: row.prefix,
        last4: row.last4,
        createdAt: codec.date(row.created_at),
        revokedAt: optionalDate(row.revoked_at),
        expiresAt: optionalDate(row.expires_at),
        spendLimit: row.spend_limit === null ? null : BigInt(row.spend_limit),
        spent: BigInt(row.spent),
        models: row.models === null ? null : codec.models(row.models),
        rateLimits: row.rate_limits === null ? null : (JSON.parse(row.rate_limits) as KeyRateLimits),
        budget: budgetOf(row.budget),
        sessionBudget: row.session_budget === null ? null : BigInt(row.session_budget),
        allowedNetworks: row.allowed_networks === null ? null : (JSON.parse(row.allowed_networks) as string[]),
        operatorLimits: row.operator_limits === null ? null : operatorLimitsFromJson(row.operator_limits),
        memberAccountId: row.member_account_id ?? null,
      };
    },

    toJoinedAccount(row: JoinedAccountColumns<T>): Account {
      return mappers.toAccount({
        id: row.account_id,
        name: row.account_name,
        email: row.account_email,
        role: row.account_role,
        disabled: row.account_disabled,
        created_at: row.account_created_at,
        budget: row.account_budget,
        session_budget: row.account_session_budget,
      });
    },

    toKeyIdentity(row: KeyIdentityRow<T>): KeyIdentity {
      const accountLimits = row.account_operator_limits == null ? null : operatorLimitsFromJson(row.account_operator_limits);
      const memberLimits =
        row.member_models == null && row.member_rate_limits == null && row.member_budget == null
          ? null
          : {
              models: row.member_models == null ? null : (JSON.parse(row.member_models) as string[]),
              rateLimits: row.member_rate_limits == null ? null : (JSON.parse(row.member_rate_limits) as KeyRateLimits),
              budget: budgetOf(row.member_budget ?? null),
            };
      return {
        key: mappers.toKeyRecord(row),
        account: mappers.toJoinedAccount(row),
        hash: row.hash,
        ...(accountLimits === null ? {} : { accountLimits }),
        ...(memberLimits === null ? {} : { memberLimits }),
      };
    },

    toSessionWithAccount(row: SessionAccountRow<T>): { session: SessionRecord; account: Account } {
      return { session: mappers.toSession(row), account: mappers.toJoinedAccount(row) };
    },

    toCharge(row: ChargeRow<T>): ChargeRecord {
      return {
        requestId: row.request_id,
        clientRequestId: row.client_request_id,
        accountId: row.account_id,
        keyId: row.key_id,
        model: row.model,
        provider: row.provider,
        endpoint: row.endpoint,
        ...tokensOf(row),
        toolCalls: JSON.parse(row.tool_calls) as ToolCalls,
        images: Number(row.images),
        cost: BigInt(row.cost),
        held: BigInt(row.held),
        overage: BigInt(row.overage),
        unbilled: BigInt(row.unbilled),
        // Absent rather than null when unknown, as on rows made before costs were kept.
        ...(row.upstream_cost !== null && row.upstream_cost !== undefined && { upstreamCost: BigInt(row.upstream_cost) }),
        prices: row.prices === null ? null : (JSON.parse(row.prices) as ChargePrices),
        serviceTier: row.service_tier,
        longContext: codec.flag(row.long_context),
        usageSource: row.usage_source,
        status: row.status,
        outcome: row.outcome,
        latencyMs: row.latency_ms,
        createdAt: codec.date(row.created_at),
        sessionId: row.session_id,
        requestedModel: row.requested_model,
        servedModel: row.served_model,
        attempts: JSON.parse(row.attempts) as ChargeAttempt[],
        ttfbMs: row.ttfb_ms,
        userAgent: row.user_agent,
        origin: row.origin,
        // Absent rather than null for an account's own key, as on rows made before organisations.
        ...(row.member_account_id !== null && row.member_account_id !== undefined && { memberAccountId: row.member_account_id }),
      };
    },

    toCredit(row: CreditRow<T>): CreditRecord {
      return {
        id: row.id,
        accountId: row.account_id,
        amount: BigInt(row.amount),
        kind: row.kind,
        actor: row.actor,
        note: row.note,
        createdAt: codec.date(row.created_at),
      };
    },

    toCode(row: CodeRow<T>): RedemptionCodeRecord {
      return {
        id: row.id,
        amount: BigInt(row.amount),
        createdAt: codec.date(row.created_at),
        createdBy: row.created_by,
        expiresAt: optionalDate(row.expires_at),
        redeemedBy: row.redeemed_by,
        redeemedAt: optionalDate(row.redeemed_at),
      };
    },
  };
  return mappers;
}

/** The ledger-totals row of one account as `LedgerTotals`. */
export function toLedgerTotals(row: TotalsRow): LedgerTotals {
  return {
    accountId: row.account_id,
    accountName: row.name,
    credits: BigInt(row.credits),
    charges: BigInt(row.charges),
    debits: BigInt(row.debits),
    balance: BigInt(row.balance),
    held: BigInt(row.held),
    openHolds: BigInt(row.holds),
  };
}

/** The charges columns to SELECT, each money column written by `money` so it arrives as text. */
export function chargeSelectList(money: (column: MoneyColumn | 'upstream_cost') => string): string {
  return CHARGE_COLUMNS.map((column) => (MONEY_COLUMNS.has(column) ? money(column as MoneyColumn | 'upstream_cost') : column)).join(', ');
}

const MONEY_COLUMNS: ReadonlySet<string> = new Set<MoneyColumn | 'upstream_cost'>(['cost', 'held', 'overage', 'unbilled', 'upstream_cost']);

/**
 * A charge as insert parameters, its time stored with `date`. The keys are in `CHARGE_COLUMNS` order,
 * which SQLite's positional insert (`chargeValues`) relies on. The cost is the charge's own: the billing
 * plugin decided it, and the store records it as it is, never capped against a balance it may not see whole.
 */
export function chargeParams<T extends ColumnTypes>(charge: ChargeRecord, date: (at: Date) => T['date'], flag: (value: boolean) => T['flag']): ChargeParams<T> {
  return {
    request_id: charge.requestId,
    client_request_id: charge.clientRequestId,
    account_id: charge.accountId,
    key_id: charge.keyId,
    model: charge.model,
    provider: charge.provider,
    endpoint: charge.endpoint,
    // Field by field, in TOKEN_KINDS order: a new kind does not compile until it is listed here too.
    input_tokens: charge.inputTokens,
    cache_write_tokens: charge.cacheWriteTokens,
    cache_write_1h_tokens: charge.cacheWrite1hTokens,
    cache_read_tokens: charge.cacheReadTokens,
    output_tokens: charge.outputTokens,
    image_input_tokens: charge.imageInputTokens,
    image_output_tokens: charge.imageOutputTokens,
    tool_calls: JSON.stringify(charge.toolCalls),
    images: charge.images ?? 0,
    cost: charge.cost,
    held: charge.held,
    overage: charge.overage,
    unbilled: charge.unbilled,
    prices: charge.prices === null ? null : pricesText(charge.prices),
    service_tier: charge.serviceTier,
    long_context: flag(charge.longContext),
    usage_source: charge.usageSource,
    status: charge.status,
    outcome: charge.outcome,
    latency_ms: Math.max(0, Math.round(charge.latencyMs)),
    created_at: date(charge.createdAt),
    session_id: charge.sessionId ?? null,
    requested_model: charge.requestedModel ?? null,
    served_model: charge.servedModel ?? null,
    attempts: JSON.stringify(charge.attempts ?? []),
    ttfb_ms: charge.ttfbMs === undefined || charge.ttfbMs === null ? null : Math.max(0, Math.round(charge.ttfbMs)),
    user_agent: charge.userAgent ?? null,
    origin: charge.origin ?? null,
    upstream_cost: charge.upstreamCost ?? null,
    member_account_id: charge.memberAccountId ?? null,
  };
}

/** The parameters in `CHARGE_COLUMNS` order, for a positional insert: binding by name looks each column up. */
export function chargeValues<T extends ColumnTypes>(params: ChargeParams<T>): unknown[] {
  return Object.values(params);
}

/**
 * Each price snapshot's JSON text, made once: billing gives every charge priced from one table the
 * same snapshot object (snapshots are never changed once made), so the text is the same for all of them.
 */
const pricesTexts = new WeakMap<ChargePrices, string>();

function pricesText(prices: ChargePrices): string {
  let text = pricesTexts.get(prices);
  if (text === undefined) pricesTexts.set(prices, (text = JSON.stringify(prices)));
  return text;
}

function tokensOf(row: TokenColumns): TokenCounts {
  return Object.fromEntries(TOKEN_KINDS.map((kind) => [kind, Number(row[TOKEN_COLUMNS[kind]])])) as Record<TokenKind, number>;
}

/** How SQLite stores the differing columns: milliseconds, 0/1, JSON text. */
export const SQLITE_CODEC: ColumnCodec<SqliteColumns> = {
  date: (ms) => new Date(ms),
  flag: (value) => value !== 0,
  models: (json) => JSON.parse(json) as string[],
};

/** pg already returns Date, boolean and string[]: nothing to decode. */
export const POSTGRES_CODEC: ColumnCodec<PostgresColumns> = {
  date: (value) => value,
  flag: (value) => value,
  models: (value) => value,
};
