/**
 * CSV for exports (RFC 4180: commas, CRLF, quotes doubled). A cell that a spreadsheet would run as a
 * formula (starting with = + - @, tab or CR) is prefixed with an apostrophe: a key name such as
 * `=HYPERLINK(…)` must stay text when an operator opens the export (CSV injection).
 */
const NEEDS_QUOTES = /[",\r\n]/;
const FORMULA_START = /^[=+\-@\t\r]/;

function cell(value: string | number | boolean | null): string {
  if (value === null) return '';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  const text = FORMULA_START.test(value) && !/^-?\d+(\.\d+)?$/.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function toCsv<F extends string>(fields: readonly F[], rows: readonly Readonly<Record<F, string | number | boolean | null>>[]): string {
  const lines = [fields.join(','), ...rows.map((row) => fields.map((field) => cell(row[field])).join(','))];
  return `${lines.join('\r\n')}\r\n`;
}

/** Sets the headers that make a browser save `body` as `filename`. */
export function attachment(ctx: { set(field: string, value: string): void }, filename: string): void {
  ctx.set('content-type', 'text/csv; charset=utf-8');
  ctx.set('content-disposition', `attachment; filename="${filename}"`);
}
