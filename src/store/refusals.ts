/**
 * Refused requests: those the gateway answered with an error before anything was held or forwarded
 * (a wrong key, an unknown model, a rate limit, a balance or budget that cannot admit it). They cost
 * nothing and move no money, so they live beside the ledger, not in it: one row per request, or one
 * row standing for many (`count`) once a source refuses more than its share in a window
 * (`src/http/refusal-recorder.ts` decides which). The SQL is written once for both dialects.
 */

export interface RefusalRecord {
  /** The request's id (`req_…`), or for a row that stands for many, an id of its own (`rfx_…`). */
  readonly id: string;
  /** When the request was refused; for a row standing for many, the latest of them. */
  readonly createdAt: Date;
  /** Null when the request named no usable key (a 401). */
  readonly accountId: string | null;
  readonly keyId: string | null;
  /** For a key made in an organisation, its member (as charges record them); null otherwise. */
  readonly memberAccountId: string | null;
  /** The client's address, kept only for a request of no account: who else is to know it. */
  readonly address: string | null;
  /** The model the request asked for, as it was written (clipped); null when it named none. */
  readonly model: string | null;
  readonly endpoint: string;
  readonly status: number;
  /** The `TOLLGATE_ERR_*` code it was refused with. */
  readonly code: string;
  /** What refused it, where more than one thing could: `budget:key:month`, `key`, `account`, `rate:key`… */
  readonly level: string | null;
  /** How many requests the row stands for: 1, or more for a folded row. */
  readonly count: number;
  readonly sessionId: string | null;
}

export interface RefusalFilter {
  readonly accountId?: string;
  readonly keyId?: string;
  /** One member's refusals in an organisation (`accountId` the organisation). */
  readonly memberAccountId?: string;
  readonly models?: readonly string[];
  readonly sessionId?: string;
  readonly endpoint?: string;
  readonly since?: Date;
  /** Exclusive. */
  readonly until?: Date;
}

/** One reason of a range's refusals: how many requests it refused, and when last. */
export interface RefusalSummaryRow {
  readonly status: number;
  readonly code: string;
  readonly level: string | null;
  readonly requests: number;
  readonly lastAt: Date;
}

export interface RefusalStore {
  /** Writes rows in one transaction; a row whose id exists already adds its `count` to it. */
  record(rows: readonly RefusalRecord[]): Promise<void>;
  /** Newest first; `before` pages on from a row's (time, id). */
  list(filter: RefusalFilter & { readonly limit: number; readonly before?: RefusalCursor }): Promise<RefusalRecord[]>;
  /** The requests refused under `filter`, and each reason's count, most first. */
  summary(filter: RefusalFilter): Promise<RefusalSummaryRow[]>;
}

/** Where a page of refusals ends: rows older than this one, or as old with a smaller id. */
export interface RefusalCursor {
  readonly createdAt: Date;
  readonly id: string;
}

export const REFUSAL_COLUMNS = 'id, created_at, account_id, key_id, address, model, endpoint, status, code, level, count, session_id, member_account_id';

export interface RefusalRow<D> {
  id: string;
  created_at: D;
  account_id: string | null;
  key_id: string | null;
  address: string | null;
  model: string | null;
  endpoint: string;
  status: number;
  code: string;
  level: string | null;
  count: number | string;
  session_id: string | null;
  member_account_id: string | null;
}

export function toRefusal<D>(row: RefusalRow<D>, date: (value: D) => Date): RefusalRecord {
  return {
    id: row.id,
    createdAt: date(row.created_at),
    accountId: row.account_id,
    keyId: row.key_id,
    memberAccountId: row.member_account_id,
    address: row.address,
    model: row.model,
    endpoint: row.endpoint,
    status: Number(row.status),
    code: row.code,
    level: row.level,
    count: Number(row.count),
    sessionId: row.session_id,
  };
}

/** A row's values in `REFUSAL_COLUMNS` order. */
export function refusalValues(row: RefusalRecord, date: (value: Date) => unknown): unknown[] {
  return [row.id, date(row.createdAt), row.accountId, row.keyId, row.address, row.model, row.endpoint, row.status, row.code, row.level, row.count, row.sessionId, row.memberAccountId];
}

/** The upsert both dialects run per row: a folded row's later flushes add to its count. */
export function refusalUpsert(placeholders: readonly string[]): string {
  return `INSERT INTO refusals (${REFUSAL_COLUMNS}) VALUES (${placeholders.join(', ')})
    ON CONFLICT (id) DO UPDATE SET count = refusals.count + excluded.count,
      created_at = CASE WHEN excluded.created_at > refusals.created_at THEN excluded.created_at ELSE refusals.created_at END,
      model = excluded.model`;
}

export interface RefusalWhere {
  readonly sql: string;
  readonly params: unknown[];
}

/** The conditions of `filter` (and a page's cursor); `placeholder` names the n-th parameter. */
export function refusalWhere(
  filter: RefusalFilter & { readonly before?: RefusalCursor },
  date: (value: Date) => unknown,
  placeholder: (index: number) => string,
): RefusalWhere {
  const params: unknown[] = [];
  const conditions: string[] = [];
  const param = (value: unknown) => {
    params.push(value);
    return placeholder(params.length);
  };
  if (filter.accountId !== undefined) conditions.push(`account_id = ${param(filter.accountId)}`);
  if (filter.keyId !== undefined) conditions.push(`key_id = ${param(filter.keyId)}`);
  if (filter.memberAccountId !== undefined) conditions.push(`member_account_id = ${param(filter.memberAccountId)}`);
  if (filter.models !== undefined) {
    conditions.push(filter.models.length === 0 ? '1 = 0' : `model IN (${filter.models.map((model) => param(model)).join(', ')})`);
  }
  if (filter.sessionId !== undefined) conditions.push(`session_id = ${param(filter.sessionId)}`);
  if (filter.endpoint !== undefined) conditions.push(`endpoint = ${param(filter.endpoint)}`);
  if (filter.since !== undefined) conditions.push(`created_at >= ${param(date(filter.since))}`);
  if (filter.until !== undefined) conditions.push(`created_at < ${param(date(filter.until))}`);
  if (filter.before !== undefined) {
    // Given twice: SQLite's `?` placeholders are positional.
    conditions.push(`(created_at < ${param(date(filter.before.createdAt))} OR (created_at = ${param(date(filter.before.createdAt))} AND id < ${param(filter.before.id)}))`);
  }
  return { sql: conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`, params };
}

/** The summary statement over `where`. */
export function refusalSummarySql(where: string): string {
  return `SELECT status, code, level, sum(count) AS requests, max(created_at) AS last_at
            FROM refusals ${where}
           GROUP BY status, code, level ORDER BY requests DESC, code ASC`;
}

export interface RefusalSummarySqlRow<D> {
  status: number;
  code: string;
  level: string | null;
  requests: number | string;
  last_at: D;
}

export function toRefusalSummary<D>(row: RefusalSummarySqlRow<D>, date: (value: D) => Date): RefusalSummaryRow {
  return { status: Number(row.status), code: row.code, level: row.level, requests: Number(row.requests), lastAt: date(row.last_at) };
}
