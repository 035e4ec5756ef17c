// Dates from the API are ISO-8601 UTC; people read them in their own time zone.

const dateTimeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });

export function formatDateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : dateTimeFormat.format(date);
}

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : dateFormat.format(date);
}

/**
 * An <input type="date"> value ("2026-12-31") → the last instant of that day, UTC.
 * A person choosing "expires on the 31st" expects it to work all that day.
 */
export function endOfDayIso(dateInput: string): string | null {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(dateInput)) return null;
  const end = new Date(`${dateInput}T23:59:59.999Z`);
  return Number.isNaN(end.getTime()) ? null : end.toISOString();
}

/** "2026-11-09" → "9 Nov" style short label for chart axes, read as a UTC day. */
export function shortDayLabel(day: string): string {
  const date = new Date(`${day}T00:00:00Z`);
  if (Number.isNaN(date.getTime())) return day;
  return new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short', timeZone: 'UTC' }).format(date);
}

/** Today's date in the person's time zone, as an <input type="date"> value. */
export function todayInputValue(): string {
  const now = new Date();
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
}
