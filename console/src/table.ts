// Data tables that stay readable on a phone: the table scrolls sideways inside a
// focusable, labelled region instead of squeezing or overflowing the page.
import { h, uniqueId, type Child } from './dom.js';

interface Column<Row> {
  label: string;
  cell(row: Row): Child;
  /** Right-aligned, tabular figures: amounts and counts. */
  numeric?: boolean;
}

export interface TableSpec<Row> {
  caption: string;
  columns: ReadonlyArray<Column<Row>>;
  rows: readonly Row[];
  /** Shown below the (then empty) table; the tbody only ever holds data rows. */
  emptyText: string;
  testId?: string;
  /** Hide the caption visually when a heading already says the same. */
  hideCaption?: boolean;
}

export function dataTable<Row>(spec: TableSpec<Row>): HTMLElement {
  const captionId = uniqueId('caption');
  const numericClass = (column: Column<Row>) => (column.numeric ? 'numeric' : null);
  const table = h('table', { class: 'data-table', 'data-testid': spec.testId ?? null },
    h('caption', { id: captionId, class: spec.hideCaption ? 'visually-hidden' : null }, spec.caption),
    h('thead', null, h('tr', null, spec.columns.map((column) =>
      h('th', { scope: 'col', class: numericClass(column) }, column.label)))),
    h('tbody', null, spec.rows.map((row) => h('tr', null, spec.columns.map((column) =>
      h('td', { class: numericClass(column) }, column.cell(row)))))));
  return h('div', { class: 'table-block' },
    // tabindex lets keyboard users scroll a table wider than the screen.
    h('div', { class: 'table-scroll', role: 'region', 'aria-labelledby': captionId, tabindex: 0 }, table),
    spec.rows.length === 0 ? h('p', { class: 'empty' }, spec.emptyText) : null);
}
