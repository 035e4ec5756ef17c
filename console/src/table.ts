// Data tables that fit the screen: the columns that matter first, the rest behind a column
// chooser (remembered per table in this browser), the row's name and its actions pinned while the
// table scrolls sideways inside a focusable, labelled region, and on a phone one card per row.
import { h, replace, uniqueId, type Child } from './dom.js';

interface Column<Row> {
  label: string;
  cell(row: Row): Child;
  /** Right-aligned, tabular figures: amounts and counts. */
  numeric?: boolean;
  /** Shown only once chosen in the table's column chooser (needs the table's `columnsKey`). */
  optional?: boolean;
  /** Kept in view while the table scrolls sideways: the row's name (`start`) or its actions (`end`). */
  pin?: 'start' | 'end';
}

export interface TableSpec<Row> {
  caption: string;
  columns: ReadonlyArray<Column<Row> | null>;
  rows: readonly Row[];
  /** Shown below the (then empty) table; the tbody only ever holds data rows. */
  emptyText: string;
  testId?: string;
  /** Hide the caption visually when a heading already says the same. */
  hideCaption?: boolean;
  /** Where the chosen optional columns are remembered; without it every column is shown. */
  columnsKey?: string;
  /** A class for a row (a refused request, a disabled account). */
  rowClass?(row: Row): string | null;
}

const STORAGE_PREFIX = 'tollgate.columns.';

function chosenColumns(key: string): Set<string> {
  try {
    const saved = JSON.parse(localStorage.getItem(STORAGE_PREFIX + key) ?? '[]') as unknown;
    return new Set(Array.isArray(saved) ? saved.filter((entry): entry is string => typeof entry === 'string') : []);
  } catch {
    return new Set();
  }
}

function saveColumns(key: string, chosen: ReadonlySet<string>): void {
  try {
    localStorage.setItem(STORAGE_PREFIX + key, JSON.stringify([...chosen]));
  } catch {
    // Storage refused (private mode, full): the choice lasts for this page only.
  }
}

export function dataTable<Row>(spec: TableSpec<Row>): HTMLElement {
  const columns = spec.columns.filter((column): column is Column<Row> => column !== null);
  const optional = spec.columnsKey === undefined ? [] : columns.filter((column) => column.optional);
  const chosen = spec.columnsKey === undefined ? new Set<string>() : chosenColumns(spec.columnsKey);
  const captionId = uniqueId('caption');
  const scroll = h('div', { class: 'table-scroll', role: 'region', 'aria-labelledby': captionId, tabindex: 0 });
  const draw = () => {
    const shown = columns.filter((column) => !column.optional || optional.length === 0 || chosen.has(column.label));
    replace(scroll, tableOf(spec, shown, captionId));
  };
  draw();
  const chooser = optional.length === 0 ? null : columnChooser(optional.map((column) => column.label), chosen, () => {
    saveColumns(spec.columnsKey!, chosen);
    draw();
  });
  return h('div', { class: 'table-block' },
    chooser,
    scroll,
    spec.rows.length === 0 ? h('p', { class: 'empty' }, spec.emptyText) : null);
}

function tableOf<Row>(spec: TableSpec<Row>, columns: readonly Column<Row>[], captionId: string): HTMLTableElement {
  const classOf = (column: Column<Row>) => [column.numeric ? 'numeric' : '', column.pin ? `pin-${column.pin}` : ''].filter(Boolean).join(' ') || null;
  return h('table', { class: 'data-table', 'data-testid': spec.testId ?? null },
    h('caption', { id: captionId, class: spec.hideCaption ? 'visually-hidden' : null }, spec.caption),
    h('thead', null, h('tr', null, columns.map((column) =>
      h('th', { scope: 'col', class: classOf(column) }, column.label)))),
    h('tbody', null, spec.rows.map((row) => h('tr', { class: spec.rowClass?.(row) ?? null }, columns.map((column) =>
      // The label repeats on each cell for the card layout of narrow screens.
      h('td', { class: classOf(column), 'data-label': column.label }, column.cell(row)))))));
}

/** A disclosure of checkboxes, one per optional column. */
function columnChooser(labels: readonly string[], chosen: Set<string>, changed: () => void): HTMLElement {
  return h('details', { class: 'column-chooser', 'data-testid': 'column-chooser' },
    h('summary', null, `Columns (${labels.length} more)`),
    h('fieldset', null,
      h('legend', { class: 'visually-hidden' }, 'Columns to show'),
      labels.map((label) => h('label', { class: 'checkbox' },
        h('input', {
          type: 'checkbox',
          name: 'column',
          value: label,
          checked: chosen.has(label),
          onchange: (event: Event) => {
            if ((event.target as HTMLInputElement).checked) chosen.add(label);
            else chosen.delete(label);
            changed();
          },
        }),
        ` ${label}`))));
}
