// /console/admin/audit — who changed which account, balance, key, token or code, and every config reload.
import { apiGet, withQuery } from '../api.js';
import { h } from '../dom.js';
import { createForm, inputField, selectField, valueOf } from '../forms.js';
import { loadInto } from '../load.js';
import type { Page, PageContext } from '../page.js';
import { replaceQuery } from '../router.js';
import { dataTable } from '../table.js';
import type { AuditEntry } from '../types.js';
import { badge, pageHeading, timeEl } from '../ui.js';

const ROW_LIMIT = 200;
const FILTERS = ['actor', 'action', 'target', 'since', 'until'] as const;
type Filters = Partial<Record<(typeof FILTERS)[number], string>>;

export const adminAuditPage: Page = {
  title: 'Audit log',
  admin: true,
  render(context: PageContext) {
    const results = h('div');
    const actions = selectField({ name: 'action', label: 'Action', value: context.query.get('action') ?? '', options: [{ value: '', label: 'any' }] });
    const exportLink = h('a', { class: 'button', download: true }, 'Export CSV');
    const show = (filters: Filters) => {
      exportLink.setAttribute('href', withQuery('/api/admin/audit', { ...filters, format: 'csv' }));
      void loadInto(results,
        () => apiGet<{ entries: AuditEntry[]; actions: string[] }>(withQuery('/api/admin/audit', { ...filters, limit: ROW_LIMIT }), { signal: context.signal }),
        (data) => {
          fillActions(actions, data.actions, filters.action ?? '');
          return auditTable(data.entries);
        });
    };
    const initial = filtersFrom(context.query);
    context.root.append(
      pageHeading('Audit log', 'Every change to accounts, balances, tokens and codes, from the console, the API and the CLI, and every config reload. Newest first.'),
      filterForm(initial, actions, (filters) => {
        replaceQuery(new URLSearchParams(filters));
        show(filters);
      }),
      h('div', { class: 'button-row' }, exportLink),
      results);
    show(initial);
  },
};

function filtersFrom(query: URLSearchParams): Filters {
  const filters: Filters = {};
  for (const name of FILTERS) {
    const value = query.get(name);
    if (value) filters[name] = value;
  }
  return filters;
}

// The actions come with the log itself, so the list is the server's and never drifts from it.
function fillActions(field: HTMLElement, actions: readonly string[], chosen: string): void {
  const select = field.querySelector('select');
  if (select === null || select.options.length > 1) return;
  for (const action of actions) select.append(h('option', { value: action }, action));
  select.value = chosen;
}

function filterForm(current: Filters, actions: HTMLElement, apply: (filters: Filters) => void): HTMLFormElement {
  return createForm({
    label: 'Filter the audit log',
    className: 'form filters',
    submitLabel: 'Apply filters',
    fields: [
      inputField({ name: 'actor', label: 'Actor', value: current.actor ?? '', attrs: { autocomplete: 'off', spellcheck: 'false' } }),
      actions,
      inputField({ name: 'target', label: 'Target id (acc_…, key_…)', value: current.target ?? '', attrs: { autocomplete: 'off', spellcheck: 'false' } }),
      inputField({ name: 'since', label: 'From (UTC)', type: 'date', value: current.since ?? '' }),
      inputField({ name: 'until', label: 'Until (UTC)', type: 'date', value: current.until ?? '' }),
    ],
    async onSubmit(form) {
      const filters: Filters = {};
      for (const name of FILTERS) {
        const value = valueOf(form, name);
        if (value) filters[name] = value;
      }
      apply(filters);
    },
  });
}

function shownValue(value: unknown): string {
  if (value === undefined) return '—';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** What changed, a line per field: `balance: 10 → 6.75`; a created or removed thing lists its fields. */
function changes(entry: AuditEntry): HTMLElement | string {
  const before = entry.before ?? {};
  const after = entry.after ?? {};
  const fields = [...new Set([...Object.keys(before), ...Object.keys(after)])];
  const lines = fields
    .filter((field) => JSON.stringify(before[field]) !== JSON.stringify(after[field]))
    .map((field) => {
      if (entry.before === null) return `${field}: ${shownValue(after[field])}`;
      if (entry.after === null) return `${field}: ${shownValue(before[field])} (removed)`;
      return `${field}: ${shownValue(before[field])} → ${shownValue(after[field])}`;
    });
  if (lines.length === 0) return '—';
  return h('ul', { class: 'changes', title: JSON.stringify({ before: entry.before, after: entry.after }) }, ...lines.map((line) => h('li', null, line)));
}

function target(entry: AuditEntry): HTMLElement | string {
  if (entry.target === null) return '—';
  const name = entry.account_name;
  return h('span', null, name === null ? '' : `${name} `, h('code', { class: name === null ? '' : 'muted' }, entry.target));
}

function auditTable(entries: readonly AuditEntry[]): HTMLElement {
  return dataTable({
    caption: 'Audit log, newest first',
    hideCaption: true,
    rows: entries,
    emptyText: 'No entries match these filters.',
    testId: 'audit-table',
    columns: [
      { label: 'Time', cell: (entry) => timeEl(entry.at) },
      { label: 'Actor', cell: (entry) => entry.actor },
      { label: 'Via', cell: (entry) => badge(entry.surface, 'neutral') },
      { label: 'Action', cell: (entry) => h('code', null, entry.action) },
      { label: 'Target', cell: target },
      { label: 'Changes', cell: changes },
      { label: 'Request', cell: (entry) => entry.request_id ?? '—' },
    ],
  });
}
