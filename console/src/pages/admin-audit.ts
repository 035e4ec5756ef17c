// /console/admin/audit — who changed which account, balance, key, token or code, and every config reload.
import { apiGet, withQuery } from '../api.js';
import { h } from '../dom.js';
import { createForm, inputField, valueOf } from '../forms.js';
import { loadInto } from '../load.js';
import type { Page, PageContext } from '../page.js';
import { replaceQuery } from '../router.js';
import { dataTable } from '../table.js';
import type { AuditEntry } from '../types.js';
import { badge, pageHeading, timeEl } from '../ui.js';

const ROW_LIMIT = 200;
const FILTERS = ['actor', 'target', 'since', 'until'] as const;
type Filters = Partial<Record<(typeof FILTERS)[number], string>>;

export const adminAuditPage: Page = {
  title: 'Audit log',
  admin: true,
  render(context: PageContext) {
    const results = h('div');
    const exportLink = h('a', { class: 'button', download: true }, 'Export CSV');
    const show = (filters: Filters) => {
      exportLink.setAttribute('href', withQuery('/api/admin/audit', { ...filters, format: 'csv' }));
      void loadInto(results,
        () => apiGet<{ entries: AuditEntry[] }>(withQuery('/api/admin/audit', { ...filters, limit: ROW_LIMIT }), { signal: context.signal }),
        (data) => auditTable(data.entries));
    };
    const initial = filtersFrom(context.query);
    context.root.append(
      pageHeading('Audit log', 'Every change to accounts, balances, tokens and codes, from the console, the API and the CLI, and every config reload. Newest first.'),
      filterForm(initial, (filters) => {
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

function filterForm(current: Filters, apply: (filters: Filters) => void): HTMLFormElement {
  return createForm({
    label: 'Filter the audit log',
    className: 'form filters',
    submitLabel: 'Apply filters',
    fields: [
      inputField({ name: 'actor', label: 'Actor', value: current.actor ?? '', attrs: { autocomplete: 'off', spellcheck: 'false' } }),
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

function state(value: Record<string, unknown> | null): HTMLElement | string {
  return value === null ? '—' : h('code', null, JSON.stringify(value));
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
      { label: 'Target', cell: (entry) => (entry.target === null ? '—' : h('code', null, entry.target)) },
      { label: 'Before', cell: (entry) => state(entry.before) },
      { label: 'After', cell: (entry) => state(entry.after) },
      { label: 'Request', cell: (entry) => entry.request_id ?? '—' },
    ],
  });
}
