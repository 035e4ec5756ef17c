/**
 * The audit log's one query, written once for both dialects: the WHERE clause of a filter, with
 * placeholders made by the caller (`?` for SQLite, `$n` for PostgreSQL).
 */
import { DEFAULT_AUDIT_LIMIT, type AuditFilter } from './audit';

export interface AuditWhere {
  readonly sql: string;
  readonly params: unknown[];
  readonly limit: number;
}

/** The conditions of `filter`; `date` turns a bound into the backend's value, `placeholder` names the n-th parameter. */
export function auditWhere(filter: AuditFilter, date: (value: Date) => unknown, placeholder: (index: number) => string): AuditWhere {
  const params: unknown[] = [];
  const conditions: string[] = [];
  const param = (value: unknown) => {
    params.push(value);
    return placeholder(params.length);
  };
  if (filter.actor !== undefined) conditions.push(`actor = ${param(filter.actor)}`);
  if (filter.target !== undefined) {
    // Given twice: SQLite's `?` placeholders are positional.
    conditions.push(`(target = ${param(filter.target)} OR account_id = ${param(filter.target)})`);
  }
  if (filter.action !== undefined) conditions.push(`action = ${param(filter.action)}`);
  if (filter.since !== undefined) conditions.push(`at >= ${param(date(filter.since))}`);
  if (filter.until !== undefined) conditions.push(`at < ${param(date(filter.until))}`);
  return { sql: conditions.length === 0 ? '' : `WHERE ${conditions.join(' AND ')}`, params, limit: filter.limit ?? DEFAULT_AUDIT_LIMIT };
}

/** The stored form of a before/after state. */
export function auditJson(value: Readonly<Record<string, unknown>> | null): string | null {
  return value === null ? null : JSON.stringify(value);
}
