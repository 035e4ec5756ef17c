/**
 * Statement months: calendar months in UTC, whatever the operator's or the account's timezone, so a
 * statement's period is the same on every instance and in every export.
 */

/** `2026-11`: a month as statements name it. */
export interface StatementMonth {
  readonly month: string;
  readonly year: number;
  /** The first instant of the month, UTC. */
  readonly start: Date;
  /** The first instant of the next month, UTC: the period is [start, end). */
  readonly end: Date;
}

/**
 * How long after a month ends before it counts as closed: charges reach the ledger from each
 * instance's outbox within seconds, so a statement issued an hour after midnight has them all. One
 * that still arrives later (an instance down over the turn of the month) shows on the next statement.
 */
const CLOSING_DELAY_MS = 60 * 60 * 1000;

const MONTH = /^(\d{4})-(0[1-9]|1[0-2])$/;

function monthOf(year: number, monthIndex: number): StatementMonth {
  const start = new Date(Date.UTC(year, monthIndex, 1));
  const end = new Date(Date.UTC(year, monthIndex + 1, 1));
  return { month: `${String(start.getUTCFullYear()).padStart(4, '0')}-${String(start.getUTCMonth() + 1).padStart(2, '0')}`, year: start.getUTCFullYear(), start, end };
}

/** The month `text` names (`2026-11`), or null when it names none. */
export function parseMonth(text: string): StatementMonth | null {
  const match = MONTH.exec(text);
  return match === null ? null : monthOf(Number(match[1]), Number(match[2]) - 1);
}

/** The month `at` falls in. */
function monthContaining(at: Date): StatementMonth {
  return monthOf(at.getUTCFullYear(), at.getUTCMonth());
}

/** Whether the month is closed at `now`: ended, and CLOSING_DELAY_MS more gone by. */
export function isClosed(month: StatementMonth, now: Date): boolean {
  return now.getTime() >= month.end.getTime() + CLOSING_DELAY_MS;
}

/** Every closed month from the one containing `from` on, oldest first. */
export function closedMonthsSince(from: Date, now: Date): StatementMonth[] {
  const months: StatementMonth[] = [];
  for (let month = monthContaining(from); isClosed(month, now); month = monthContaining(month.end)) months.push(month);
  return months;
}
