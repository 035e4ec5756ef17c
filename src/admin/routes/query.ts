/** Query-string parameters of list routes. */
import { invalid } from '../api-error';

export type QueryValue = string | string[] | undefined;

/** A single value; a repeated parameter is a mistake worth saying so. */
export function single(value: QueryValue, name: string): string | undefined {
  if (Array.isArray(value)) throw invalid(name, `Give ${name} once.`);
  return value === '' ? undefined : value;
}

export function limitParam(value: QueryValue, fallback: number, max: number): number {
  const text = single(value, 'limit');
  if (text === undefined) return fallback;
  const limit = Number(text);
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > max) throw invalid('limit', `limit must be a whole number from 1 to ${max}.`);
  return limit;
}

/**
 * A day (`2026-11-09`) or an ISO time. As an upper bound a bare day means the end of that day, so
 * `since=2026-11-09&until=2026-11-09` is that whole day.
 */
export function dateParam(value: QueryValue, name: string, bound: 'start' | 'end'): Date | undefined {
  const text = single(value, name);
  if (text === undefined) return undefined;
  const isDay = /^\d{4}-\d{2}-\d{2}$/.test(text);
  const date = new Date(isDay ? `${text}T00:00:00.000Z` : text);
  if (Number.isNaN(date.getTime())) throw invalid(name, `${name} must be a date such as 2026-11-09.`);
  return isDay && bound === 'end' ? new Date(date.getTime() + 86_400_000) : date;
}

/** Rows skipped before a page: a whole number from 0 up. */
export function offsetParam(value: QueryValue): number {
  const text = single(value, 'offset');
  if (text === undefined) return 0;
  const offset = Number(text);
  if (!Number.isSafeInteger(offset) || offset < 0) throw invalid('offset', 'offset must be a whole number from 0 up.');
  return offset;
}
