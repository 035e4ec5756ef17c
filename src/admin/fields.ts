/**
 * Checks of the management API's request fields. Each returns the value in the type the store wants
 * or throws a 400 naming the field, with a message a person can act on.
 */
import { formatUnits, unitsToNano } from '../billing/money';
import type { Budget, BudgetPeriod, KeyRateLimits } from '../store/store';
import { isTimezone } from '../billing/budget-period';
import { invalid } from './api-error';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../auth/passwords';
import type { JsonObject } from './json-body';
import { networkListProblem } from '../auth/networks';

/** No single credit, code or limit above a billion units: far beyond any real top-up, far below 2^63 nano-units. */
const MAX_AMOUNT = 1_000_000_000n * 1_000_000_000n;
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{2,39}$/;
const EMAIL_PATTERN = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]+$/;
const LIMIT_FIELDS = ['rpm', 'tpm', 'concurrency'] as const;
const MAX_RATE_LIMIT = 1_000_000_000;

function has(body: JsonObject, field: string): boolean {
  return Object.hasOwn(body, field);
}

export function requiredString(body: JsonObject, field: string, label: string, max = 200): string {
  const value = body[field];
  if (typeof value !== 'string' || value.trim() === '') throw invalid(field, `${label} is required.`);
  if (value.length > max) throw invalid(field, `${label} is at most ${max} characters.`);
  return value;
}

/** Absent, null or blank: null. */
export function optionalString(body: JsonObject, field: string, label: string, max = 200): string | null {
  const value = body[field];
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string') throw invalid(field, `${label} must be text.`);
  if (value.length > max) throw invalid(field, `${label} is at most ${max} characters.`);
  return value.trim() === '' ? null : value.trim();
}

export function accountName(body: JsonObject, field = 'name'): string {
  const name = requiredString(body, field, 'A name');
  if (!NAME_PATTERN.test(name)) {
    throw invalid(field, 'A name is 3 to 40 letters, digits, dots, dashes or underscores, starting with a letter or digit.');
  }
  return name;
}

export function optionalEmail(body: JsonObject, field = 'email'): string | null {
  const email = optionalString(body, field, 'An e-mail address', 254);
  if (email !== null && !EMAIL_PATTERN.test(email)) throw invalid(field, 'This is not an e-mail address.');
  return email?.toLowerCase() ?? null;
}

export function newPassword(body: JsonObject, field = 'password'): string {
  const value = body[field];
  if (typeof value !== 'string' || value.length < MIN_PASSWORD_LENGTH) {
    throw invalid(field, `A password has at least ${MIN_PASSWORD_LENGTH} characters.`);
  }
  if (value.length > MAX_PASSWORD_LENGTH) throw invalid(field, `A password has at most ${MAX_PASSWORD_LENGTH} characters.`);
  return value;
}

/** A positive amount of balance units, as a decimal string ("12.5") or a JSON number; at most nine decimals. */
export function amount(body: JsonObject, field: string, label = 'The amount'): bigint {
  const value = body[field];
  if (typeof value !== 'string' && typeof value !== 'number') throw invalid(field, `${label} is required, as a decimal such as "10" or "2.5".`);
  let nano: bigint;
  try {
    nano = unitsToNano(value);
  } catch {
    throw invalid(field, `${label} must be a decimal such as "10" or "2.5", with at most nine decimals.`);
  }
  if (nano <= 0n) throw invalid(field, `${label} must be more than 0.`);
  if (nano > MAX_AMOUNT) throw invalid(field, `${label} may be at most ${formatUnits(MAX_AMOUNT)}.`);
  return nano;
}

/** Absent: undefined (leave as is); null or "": null (no limit); otherwise a positive amount. */
export function optionalAmount(body: JsonObject, field: string, label: string): bigint | null | undefined {
  if (!has(body, field)) return undefined;
  const value = body[field];
  if (value === null || value === '') return null;
  return amount(body, field, label);
}

/** A future time, from an ISO-8601 string or a date (`2026-12-31`, read as the end of that UTC day). */
export function optionalFutureDate(body: JsonObject, field: string, label: string, now = Date.now()): Date | null {
  const value = body[field];
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string') throw invalid(field, `${label} must be a date such as 2026-12-31.`);
  const date = /^\d{4}-\d{2}-\d{2}$/.test(value) ? new Date(`${value}T23:59:59.999Z`) : new Date(value);
  if (Number.isNaN(date.getTime())) throw invalid(field, `${label} must be a date such as 2026-12-31.`);
  if (date.getTime() <= now) throw invalid(field, `${label} must be in the future.`);
  return date;
}

/** Absent: undefined; null or []: null (every model); otherwise names of configured models. */
export function optionalModelList(body: JsonObject, field: string, known: ReadonlySet<string>): readonly string[] | null | undefined {
  if (!has(body, field)) return undefined;
  const value = body[field];
  if (value === null) return null;
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) throw invalid(field, 'Models must be a list of model names.');
  const models = [...new Set(value as string[])];
  const unknown = models.filter((model) => !known.has(model));
  if (unknown.length > 0) throw invalid(field, `No such model: ${unknown.slice(0, 3).join(', ')}.`);
  return models.length === 0 ? null : models;
}

/** Absent: undefined; null or an empty list: anywhere (null); otherwise CIDRs, each checked. */
export function optionalNetworkList(body: JsonObject, field: string): readonly string[] | null | undefined {
  if (!has(body, field)) return undefined;
  const value = body[field];
  if (value === null) return null;
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) {
    throw invalid(field, 'Allowed networks must be a list of CIDRs such as "10.0.0.0/8" or "2001:db8::/32".');
  }
  const networks = [...new Set((value as string[]).map((item) => item.trim()).filter((item) => item !== ''))];
  if (networks.length === 0) return null;
  const problem = networkListProblem(networks);
  if (problem !== null) throw invalid(field, `Allowed networks: ${problem}.`);
  return networks;
}

/** Absent: undefined; null or no positive field: null; otherwise the limits given (0 dropped: no limit). */
export function optionalRateLimits(body: JsonObject, field: string): KeyRateLimits | null | undefined {
  if (!has(body, field)) return undefined;
  const value = body[field];
  if (value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid(field, 'Rate limits must be an object with rpm, tpm and concurrency.');
  const given = value as Record<string, unknown>;
  const stray = Object.keys(given).find((name) => !(LIMIT_FIELDS as readonly string[]).includes(name));
  if (stray !== undefined) throw invalid(field, `Unknown rate limit "${stray}"; use rpm, tpm and concurrency.`);
  const limits: { rpm?: number; tpm?: number; concurrency?: number } = {};
  for (const name of LIMIT_FIELDS) {
    const limit = given[name];
    if (limit === undefined || limit === null || limit === 0) continue;
    if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 0 || limit > MAX_RATE_LIMIT) {
      throw invalid(`${field}.${name}`, `${name} must be a whole number from 0 (no limit) to ${MAX_RATE_LIMIT}.`);
    }
    limits[name] = limit;
  }
  return Object.keys(limits).length === 0 ? null : limits;
}

const BUDGET_FIELDS = ['amount', 'period', 'timezone'] as const;
const PERIODS: readonly BudgetPeriod[] = ['day', 'week', 'month'];

/** Absent: undefined (leave as is); null: null (remove it); otherwise `{amount, period, timezone}` (timezone defaults to UTC). */
export function optionalBudget(body: JsonObject, field: string): Budget | null | undefined {
  if (!has(body, field)) return undefined;
  const value = body[field];
  if (value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid(field, 'A budget is an object with amount, period (day, week or month) and timezone, or null for none.');
  const given = value as JsonObject;
  const stray = Object.keys(given).find((name) => !(BUDGET_FIELDS as readonly string[]).includes(name));
  if (stray !== undefined) throw invalid(`${field}.${stray}`, `Unknown budget field "${stray}"; use amount, period and timezone.`);
  const worth = amount(given, 'amount', 'The budget');
  const period = given.period;
  if (typeof period !== 'string' || !(PERIODS as readonly string[]).includes(period)) throw invalid(`${field}.period`, 'The period is day, week or month.');
  const timezone = given.timezone ?? 'UTC';
  if (typeof timezone !== 'string' || !isTimezone(timezone)) throw invalid(`${field}.timezone`, 'The time zone must be an IANA name such as UTC or Europe/Berlin.');
  return { amount: worth, period: period as BudgetPeriod, timezone };
}

export function integerInRange(body: JsonObject, field: string, label: string, min: number, max: number): number {
  const value = body[field];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw invalid(field, `${label} must be a whole number from ${min} to ${max}.`);
  }
  return value;
}

export function boolean(body: JsonObject, field: string, label: string): boolean {
  const value = body[field];
  if (typeof value !== 'boolean') throw invalid(field, `${label} must be true or false.`);
  return value;
}
