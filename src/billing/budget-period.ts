/**
 * The calendar periods budgets are counted in: a day, a week (Monday to Monday) or a month of local
 * time in an IANA time zone, as instants. Local midnights are found with Node's own `Intl` time-zone
 * data, so a day across a daylight-saving change is 23 or 25 hours long, and a midnight the clocks
 * skip starts its day at the first instant that exists.
 */
import type { BudgetCheck, BudgetPeriod, ChargeRecord } from '../store/store';
import { countsIn } from '../store/budget-owner';

export interface Period {
  /** The first instant of the period (inclusive). */
  readonly start: Date;
  /** The first instant of the next period (exclusive): when the budget resets. */
  readonly end: Date;
}

const DAY_MS = 86_400_000;

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timezone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timezone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timezone, formatter);
  }
  return formatter;
}

/** Whether `timezone` is an IANA name this Node knows (`Europe/Berlin`, `UTC`). */
export function isTimezone(timezone: string): boolean {
  if (timezone === '') return false;
  try {
    formatterFor(timezone);
    return true;
  } catch {
    return false;
  }
}

interface LocalTime {
  readonly year: number;
  /** 1 to 12. */
  readonly month: number;
  readonly day: number;
  /** The local wall clock as if it were UTC, in ms: what the offset is measured against. */
  readonly wall: number;
}

function localTime(instant: number, timezone: string): LocalTime {
  const parts: Record<string, number> = {};
  for (const part of formatterFor(timezone).formatToParts(new Date(instant))) {
    if (part.type !== 'literal') parts[part.type] = Number(part.value);
  }
  const wall = Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second);
  return { year: parts.year, month: parts.month, day: parts.day, wall };
}

/** The zone's offset from UTC at `instant`, in ms (whole seconds: `Intl` shows no milliseconds). */
function offsetAt(instant: number, timezone: string): number {
  const second = Math.floor(instant / 1000) * 1000;
  return localTime(second, timezone).wall - second;
}

/**
 * The instant local midnight starts the date `year-month-day` (month 1 to 12; day and month may run
 * over, Date.UTC carries them). Twice at that wall time (clocks set back over midnight): the first.
 * Never at it (clocks set forward over midnight): the first instant of that date, the change itself.
 */
function midnight(year: number, month: number, day: number, timezone: string): number {
  const wall = Date.UTC(year, month - 1, day);
  // The offsets on either side of any change near this midnight (changes are months apart).
  const offsets = new Set([offsetAt(wall - DAY_MS, timezone), offsetAt(wall + DAY_MS, timezone)]);
  const candidates = [...offsets].map((offset) => wall - offset);
  const exact = candidates.filter((instant) => offsetAt(instant, timezone) === wall - instant);
  return exact.length > 0 ? Math.min(...exact) : Math.max(...candidates);
}

/** The period of `kind` in `timezone` that contains `at`. */
export function periodAt(at: Date, kind: BudgetPeriod, timezone: string): Period {
  const local = localTime(at.getTime(), timezone);
  let start: number;
  let end: number;
  switch (kind) {
    case 'day':
      start = midnight(local.year, local.month, local.day, timezone);
      end = midnight(local.year, local.month, local.day + 1, timezone);
      break;
    case 'week': {
      // getUTCDay of the local date: 0 is Sunday; weeks start on Monday.
      const sinceMonday = (new Date(Date.UTC(local.year, local.month - 1, local.day)).getUTCDay() + 6) % 7;
      start = midnight(local.year, local.month, local.day - sinceMonday, timezone);
      end = midnight(local.year, local.month, local.day - sinceMonday + 7, timezone);
      break;
    }
    case 'month':
      start = midnight(local.year, local.month, 1, timezone);
      end = midnight(local.year, local.month + 1, 1, timezone);
      break;
  }
  return { start: new Date(start), end: new Date(end) };
}

/**
 * `periodAt`, kept per kind and zone while `at` stays inside it: the request path asks for the same
 * few periods over and over, and `Intl` formatting costs microseconds each time.
 */
export class PeriodCache {
  private readonly kept = new Map<string, Period>();

  at(at: Date, kind: BudgetPeriod, timezone: string): Period {
    const name = `${kind} ${timezone}`;
    const kept = this.kept.get(name);
    const time = at.getTime();
    if (kept !== undefined && time >= kept.start.getTime() && time < kept.end.getTime()) return kept;
    const period = periodAt(at, kind, timezone);
    this.kept.set(name, period);
    return period;
  }
}

/** Whether `charge` counts against `check`: charged to its key, member or account within its period. */
export function chargedInPeriod(charge: ChargeRecord, check: BudgetCheck): boolean {
  const at = charge.createdAt.getTime();
  return countsIn(charge, check.scope, check.id) && at >= check.start.getTime() && at < check.end.getTime();
}
