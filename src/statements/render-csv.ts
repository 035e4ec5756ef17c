/** A statement as CSV: one row per figure, the exact amount beside the shown one. */
import { toCsv } from '../admin/csv';
import type { StatementDocument } from './document';
import { shownAmount } from './shown';

/** The CSV's columns, in order. */
export const STATEMENT_CSV_FIELDS = ['statement', 'month', 'section', 'item', 'name', 'requests', 'amount', 'currency', 'shown'] as const;
type Row = Record<(typeof STATEMENT_CSV_FIELDS)[number], string | number | null>;

export function statementCsv(document: StatementDocument): string {
  const row = (section: string, item: string, name: string | null, requests: number | null, amount: string): Row => ({
    statement: document.number,
    month: document.period.month,
    section,
    item,
    name,
    requests,
    amount,
    currency: document.currency,
    shown: shownAmount(amount, document.currency),
  });
  const rows: Row[] = [
    row('balance', 'opening', 'Opening balance', null, document.opening),
    row('balance', 'earlier_entries', 'Earlier entries recorded since the last statement', null, document.earlier_entries),
    ...document.lines.map((line) => row('movement', line.id, line.label, line.id === 'charges' ? document.charges.requests : null, line.sign < 0 ? `-${line.amount}`.replace(/^-0$/, '0') : line.amount)),
    ...document.charges.by_model.map((group) => row('charges_by_model', group.model, group.model, group.requests, group.amount)),
    ...document.charges.by_payer.map((group) => row(`charges_by_${document.charges.payer_kind}`, group.id, group.name, group.requests, group.amount)),
    row('balance', 'closing', 'Closing balance', null, document.closing),
  ];
  return toCsv(STATEMENT_CSV_FIELDS, rows);
}
