/**
 * The usage summary as SQL, written once for both stores: what differs is how a day is cut from a
 * time, how the models of a group are listed, and how parameters are written. Every sum is read as
 * text, so neither a cost nor a token total passes through a JS number before it is a bigint.
 */
import { TOKEN_KINDS, type TokenKind } from '../protocols/types';
import { TOKEN_COLUMNS } from './rows';
import { PLAYGROUND_SESSION_GROUP, type UsageGroup, type UsageSummaryQuery, type UsageSummaryRow } from './usage-store';

export interface SummaryDialect<D> {
  /** The UTC day of `created_at` as days since 1970-01-01: cheaper per row than a formatted date. */
  readonly day: string;
  /** The distinct models of a group, comma-separated. */
  readonly models: string;
  /** A sum written as text. */
  text(expression: string): string;
  /** The placeholder of a named parameter. */
  param(name: keyof SummaryParams<D>): string;
  date(value: Date): D;
}

export interface SummaryParams<D> {
  account: string;
  member: string;
  session: string;
  origin: string;
  since: D;
  until: D;
  limit: number;
  offset: number;
}

/** The row a summary query returns, before it becomes a `UsageSummaryRow`. */
export type SummarySqlRow<D> = {
  /** A day arrives as a number of days since 1970-01-01. */
  grp: string | number | null;
  requests: number | string;
  errors: number | string;
  cost: string;
  /** Only when the query asks for upstream sums. */
  upstream_cost?: string;
  costed_charged?: string;
  uncosted?: number | string;
  first_at: D;
  last_at: D;
  models: string | null;
} & Record<(typeof TOKEN_COLUMNS)[TokenKind], string>;

/** The playground's turns in a session, which a list of sessions shows as one group. */
const PLAYGROUND_TURN = "origin = 'playground' AND session_id IS NOT NULL";

/**
 * By session, the playground's turns are one group (each visit is a session of its own, and they
 * would otherwise fill the list); one session asked for by id is that session's charges, all of them.
 */
function sessionGroup(query: UsageSummaryQuery): string {
  return query.sessionId !== undefined ? 'session_id' : `CASE WHEN ${PLAYGROUND_TURN} THEN '${PLAYGROUND_SESSION_GROUP}' ELSE session_id END`;
}

function groupExpression(query: UsageSummaryQuery, dialect: SummaryDialect<unknown>): string {
  const group = query.groupBy;
  switch (group) {
    case 'model':
      return 'model';
    case 'key':
      return 'key_id';
    case 'day':
      return dialect.day;
    case 'session':
      return sessionGroup(query);
    case 'account':
      return 'account_id';
    case 'provider':
      return 'provider';
    case 'member':
      return 'member_account_id';
  }
}

function orderOf(group: UsageGroup, expression: string): string {
  // Charges without a provider (none was tried) sort last in both stores, whose NULL orders differ.
  if (group === 'day') return 'grp ASC';
  if (group === 'session') return 'last_at DESC, grp ASC';
  // PostgreSQL takes an output name in ORDER BY only on its own, so the test is on the column itself.
  return `sum(cost) DESC, ${expression} IS NULL, grp ASC`;
}

/** The summary statement and its parameters; `account` is bound only when the query names one. */
export function summarySql<D>(query: UsageSummaryQuery, dialect: SummaryDialect<D>): { sql: string; params: Partial<SummaryParams<D>> } {
  const where = [`created_at >= ${dialect.param('since')}`, `created_at < ${dialect.param('until')}`];
  const params: Partial<SummaryParams<D>> = { since: dialect.date(query.since), until: dialect.date(query.until), limit: query.limit, offset: query.offset };
  if (query.accountId !== null) {
    where.unshift(`account_id = ${dialect.param('account')}`);
    params.account = query.accountId;
  }
  if (query.memberAccountId !== undefined) {
    where.push(`member_account_id = ${dialect.param('member')}`);
    params.member = query.memberAccountId;
  }
  if (query.sessionId !== undefined) {
    where.push(`session_id = ${dialect.param('session')}`);
    params.session = query.sessionId;
  } else if (query.groupBy === 'session' && query.namedSessionsOnly === true) {
    where.push('session_id IS NOT NULL');
  }
  if (query.origin !== undefined) {
    where.push(`origin = ${dialect.param('origin')}`);
    params.origin = query.origin;
  }
  const tokens = TOKEN_KINDS.map((kind) => `${dialect.text(`sum(${TOKEN_COLUMNS[kind]})`)} AS ${TOKEN_COLUMNS[kind]}`).join(', ');
  const group = groupExpression(query, dialect);
  // Asked for by the operator only (an account never sees what its requests cost upstream).
  const upstream = query.upstreamCost !== true ? '' : `
           ${dialect.text('sum(upstream_cost)')} AS upstream_cost,
           ${dialect.text('sum(CASE WHEN upstream_cost IS NULL THEN 0 ELSE cost END)')} AS costed_charged,
           sum(CASE WHEN upstream_cost IS NULL THEN 1 ELSE 0 END) AS uncosted,`;
  const page = `
    SELECT ${group} AS grp, count(*) AS requests,
           sum(CASE WHEN status >= 500 THEN 1 ELSE 0 END) AS errors, ${dialect.text('sum(cost)')} AS cost, ${tokens},${upstream}
           min(created_at) AS first_at, max(created_at) AS last_at
      FROM charges WHERE ${where.join(' AND ')}
     GROUP BY grp ORDER BY ${orderOf(query.groupBy, group)}
     LIMIT ${dialect.param('limit')} OFFSET ${dialect.param('offset')}`;
  if (query.groupBy !== 'session') return { sql: page.replace(' AS last_at\n', ' AS last_at, NULL AS models\n'), params };
  // The models of the page's sessions only, each read through the session index, rather than a
  // distinct list kept for every session of the range while grouping. The charges without a session
  // are a group too (their row is null), so the rows add up to what was charged.
  const sessionWhere = where.filter((condition) => !condition.startsWith('session_id')).map((condition) => `c.${condition}`).join(' AND ');
  const modelsOf = (same: string) => `(SELECT ${dialect.models} FROM charges c WHERE ${same} AND ${sessionWhere})`;
  const sameSession = '(c.session_id = page.grp OR (page.grp IS NULL AND c.session_id IS NULL))';
  // Grouped with the playground's turns apart, a session's models leave them out (origin is null or
  // 'playground'), and the playground group's are theirs: a CASE reads only its own row's branch.
  const models = query.sessionId !== undefined
    ? modelsOf(sameSession)
    : `CASE WHEN page.grp = '${PLAYGROUND_SESSION_GROUP}' THEN ${modelsOf("c.origin = 'playground' AND c.session_id IS NOT NULL")}
            ELSE ${modelsOf('((c.session_id = page.grp AND c.origin IS NULL) OR (page.grp IS NULL AND c.session_id IS NULL))')} END`;
  const sql = `
    WITH page AS (${page})
    SELECT page.*, ${models} AS models
      FROM page ORDER BY last_at DESC, grp ASC`;
  return { sql, params };
}

const DAY_MS = 86_400_000;

export function toSummaryRow<D>(row: SummarySqlRow<D>, date: (value: D) => Date, groupBy: UsageGroup): UsageSummaryRow {
  const tokens = Object.fromEntries(TOKEN_KINDS.map((kind) => [kind, Number(row[TOKEN_COLUMNS[kind]])])) as Record<TokenKind, number>;
  return {
    group: groupBy === 'day' && row.grp !== null ? new Date(Number(row.grp) * DAY_MS).toISOString().slice(0, 10) : row.grp === null ? null : String(row.grp),
    requests: Number(row.requests),
    errors: Number(row.errors),
    cost: BigInt(row.cost),
    upstream: row.upstream_cost === undefined ? null : { cost: BigInt(row.upstream_cost), costedCharged: BigInt(row.costed_charged ?? '0'), uncosted: Number(row.uncosted ?? 0) },
    ...tokens,
    firstAt: date(row.first_at),
    lastAt: date(row.last_at),
    models: row.models === null ? null : [...new Set(row.models.split(','))].sort(),
  };
}
