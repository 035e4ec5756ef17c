/**
 * The WHERE clause of a charge filter, written once for both dialects (`?` for SQLite, `$n` for
 * PostgreSQL, made by the caller), and the totals over every charge it matches.
 */
import type { ChargeFilter } from './store';

export interface ChargeWhere {
  readonly sql: string;
  readonly params: unknown[];
}

export function chargeWhere(filter: ChargeFilter, date: (value: Date) => unknown, placeholder: (index: number) => string): ChargeWhere {
  const params: unknown[] = [];
  const conditions: string[] = [];
  const param = (value: unknown) => {
    params.push(value);
    return placeholder(params.length);
  };
  if (filter.accountId !== undefined) conditions.push(`account_id = ${param(filter.accountId)}`);
  if (filter.memberAccountId !== undefined) conditions.push(`member_account_id = ${param(filter.memberAccountId)}`);
  if (filter.keyId !== undefined) conditions.push(`key_id = ${param(filter.keyId)}`);
  if (filter.model !== undefined) conditions.push(`model = ${param(filter.model)}`);
  if (filter.models !== undefined) {
    conditions.push(filter.models.length === 0 ? '1 = 0' : `model IN (${filter.models.map((model) => param(model)).join(', ')})`);
  }
  if (filter.sessionId !== undefined) conditions.push(`session_id = ${param(filter.sessionId)}`);
  if (filter.origin !== undefined) conditions.push(`origin = ${param(filter.origin)}`);
  if (filter.inSession === true) conditions.push('session_id IS NOT NULL');
  if (filter.endpoint !== undefined) conditions.push(`endpoint = ${param(filter.endpoint)}`);
  if (filter.status === 'ok') conditions.push('status < 400');
  if (filter.status === 'failed') conditions.push('status >= 400');
  if (filter.since !== undefined) conditions.push(`created_at >= ${param(date(filter.since))}`);
  if (filter.until !== undefined) conditions.push(`created_at < ${param(date(filter.until))}`);
  const before = filter.page?.before;
  if (before != null) {
    // Given twice: SQLite's `?` placeholders are positional.
    conditions.push(`(created_at < ${param(date(before.createdAt))} OR (created_at = ${param(date(before.createdAt))} AND request_id < ${param(before.requestId)}))`);
  }
  return { sql: conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`, params };
}

/** Newest first; a paged list breaks ties by request id, which its cursor names. */
export function chargeOrder(filter: ChargeFilter, insertion: string): string {
  return filter.page === undefined ? `created_at DESC, ${insertion} DESC` : 'created_at DESC, request_id DESC';
}

/** Every charge `where` matches: how many, what they cost (as text), how many failed. */
export function chargeTotalsSql(where: string, text: (expression: string) => string): string {
  return `SELECT count(*) AS requests, ${text('COALESCE(sum(cost), 0)')} AS cost, COALESCE(sum(CASE WHEN status >= 400 THEN 1 ELSE 0 END), 0) AS failed FROM charges ${where}`;
}

export interface ChargeTotalsRow {
  requests: number | string;
  cost: string;
  failed: number | string;
}
