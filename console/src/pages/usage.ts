// /console/usage — request-level usage with filters, and the same rows as CSV.
import { apiGet, withQuery } from '../api.js';
import { h, replace } from '../dom.js';
import { createForm, inputField, selectField, valueOf } from '../forms.js';
import { loadInto } from '../load.js';
import { formatMoney, sumDecimals } from '../money.js';
import type { Page, PageContext } from '../page.js';
import { replaceQuery } from '../router.js';
import { isAdmin } from '../session.js';
import { dataTable } from '../table.js';
import type { AdminAccount, ApiKey, PricedModel, Usage } from '../types.js';
import { badge, count, money, pageHeading, timeEl, type BadgeTone } from '../ui.js';

const ROW_LIMIT = 100;
const FILTERS = ['account_id', 'key_id', 'model', 'since', 'until'] as const;
type Filters = Partial<Record<(typeof FILTERS)[number], string>>;

interface FilterChoices {
  keys: ApiKey[];
  models: string[];
  accounts: AdminAccount[] | null;
}

export const usagePage: Page = {
  title: 'Usage',
  render(context: PageContext) {
    const filterArea = h('div');
    const results = h('div');
    const exportLink = h('a', { class: 'button', download: true }, 'Export CSV');
    context.root.append(
      pageHeading('Usage', 'Every request made with your tokens, newest first.'),
      filterArea,
      h('div', { class: 'button-row' }, exportLink),
      results);

    const show = (filters: Filters) => {
      exportLink.setAttribute('href', withQuery('/api/usage', { ...filters, format: 'csv' }));
      void loadInto(results,
        () => apiGet<{ usage: Usage[] }>(withQuery('/api/usage', { ...filters, limit: ROW_LIMIT }), { signal: context.signal }),
        (data) => usageResults(data.usage));
    };

    const initial = filtersFrom(context.query);
    show(initial);
    void loadFilterChoices(context.signal).then((choices) => {
      replace(filterArea, filterForm(choices, initial, (filters) => {
        replaceQuery(new URLSearchParams(filters));
        show(filters);
      }));
    });
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

/** Keys, models and (for admins) accounts to pick from; a list that fails to load is just left out. */
async function loadFilterChoices(signal: AbortSignal): Promise<FilterChoices> {
  const [keys, models, accounts] = await Promise.all([
    apiGet<{ keys: ApiKey[] }>('/api/keys', { signal }).then((data) => data.keys, () => []),
    apiGet<{ models: PricedModel[] }>('/api/prices', { signal }).then((data) => data.models.map((m) => m.model), () => []),
    isAdmin()
      ? apiGet<{ accounts: AdminAccount[] }>('/api/admin/accounts', { signal }).then((data) => data.accounts, () => null)
      : Promise.resolve(null),
  ]);
  return { keys, models, accounts };
}

function filterForm(choices: FilterChoices, current: Filters, apply: (filters: Filters) => void): HTMLFormElement {
  const datalistId = 'usage-model-options';
  const clear = h('button', {
    type: 'button',
    class: 'button',
    onclick: () => {
      clearFields(form);
      apply({});
    },
  }, 'Clear filters');
  const form: HTMLFormElement = createForm({
    label: 'Filter usage',
    className: 'form filters',
    submitLabel: 'Apply filters',
    secondary: [clear],
    fields: [
      choices.accounts ? selectField({
        name: 'account_id',
        label: 'Account',
        value: current.account_id ?? '',
        options: [{ value: '', label: 'My account' }, ...choices.accounts.map((a) => ({ value: a.id, label: a.name }))],
      }) : null,
      selectField({
        name: 'key_id',
        label: 'Token',
        value: current.key_id ?? '',
        options: [{ value: '', label: 'All tokens' }, ...choices.keys.map((key) => ({
          value: key.id,
          label: `${key.name ?? 'Unnamed'} (${key.prefix}…${key.last4})`,
        }))],
      }),
      inputField({ name: 'model', label: 'Model', value: current.model ?? '', attrs: { list: datalistId, autocomplete: 'off', spellcheck: 'false' } }),
      h('datalist', { id: datalistId }, choices.models.map((model) => h('option', { value: model }))),
      inputField({ name: 'since', label: 'From (UTC)', type: 'date', value: current.since ?? '' }),
      inputField({ name: 'until', label: 'Until (UTC)', type: 'date', value: current.until ?? '' }),
    ],
    async onSubmit(form) {
      apply(readFilters(form));
    },
  });
  return form;
}

function readFilters(form: HTMLFormElement): Filters {
  const filters: Filters = {};
  for (const name of FILTERS) {
    const value = valueOf(form, name);
    if (value) filters[name] = value;
  }
  return filters;
}

function clearFields(form: HTMLFormElement): void {
  for (const element of form.elements) {
    if (element instanceof HTMLInputElement) element.value = '';
    if (element instanceof HTMLSelectElement) element.selectedIndex = 0;
  }
}

const SOURCE_TONES: Record<Usage['usage_source'], BadgeTone> = {
  upstream: 'good', estimated: 'warn', partial: 'warn', none: 'bad',
};
const OUTCOME_TONES: Record<Usage['outcome'], BadgeTone> = { delivered: 'good', aborted: 'warn', failed: 'bad' };

function serviceCell(row: Usage): HTMLElement | string {
  if (!row.long_context) return row.service_tier ?? '—';
  return h('span', null, row.service_tier ?? '', row.service_tier === null ? '' : ' ', badge('long context', 'warn'));
}

function usageResults(rows: readonly Usage[]): HTMLElement {
  const total = sumDecimals(rows.map((row) => row.cost));
  const summary = rows.length === 0 ? null : h('p', { class: 'muted' },
    `${count(rows.length)} request${rows.length === 1 ? '' : 's'}, costing ${formatMoney(total)} in total.`,
    rows.length >= ROW_LIMIT ? ` Showing the newest ${ROW_LIMIT}; narrow the filters or export CSV for all of them.` : '');
  return h('div', null, summary, dataTable({
    caption: 'Usage, newest first',
    hideCaption: true,
    rows,
    emptyText: 'No requests match these filters.',
    testId: 'usage-table',
    columns: [
      { label: 'Time', cell: (row) => h('a', { href: `/console/request?id=${encodeURIComponent(row.request_id)}`, title: 'Open this request' }, timeEl(row.created_at)) },
      { label: 'Token', cell: (row) => row.key_name ?? h('code', null, row.key_id) },
      { label: 'Model', cell: (row) => h('code', null, row.model) },
      { label: 'Provider', cell: (row) => row.provider ?? '—' },
      { label: 'Endpoint', cell: (row) => h('code', null, row.endpoint) },
      { label: 'Input', cell: (row) => count(row.input_tokens), numeric: true },
      { label: 'Cache write', cell: (row) => count(row.cache_write_tokens + row.cache_write_1h_tokens), numeric: true },
      { label: 'Cache read', cell: (row) => count(row.cache_read_tokens), numeric: true },
      { label: 'Output', cell: (row) => count(row.output_tokens), numeric: true },
      // Image tokens at the image prices; the images delivered, for a per-image model what was charged.
      { label: 'Image tokens', cell: (row) => (row.image_input_tokens + row.image_output_tokens === 0 ? '—' : `${count(row.image_input_tokens)} in, ${count(row.image_output_tokens)} out`), numeric: true },
      { label: 'Images', cell: (row) => (row.images === 0 ? '—' : count(row.images)), numeric: true },
      { label: 'Tool calls', cell: (row) => (row.tool_calls === '' ? '—' : row.tool_calls) },
      // The premium service the charge was priced at: the reply's tier, and long-context rates.
      { label: 'Service', cell: (row) => serviceCell(row) },
      { label: 'Cost', cell: (row) => money(row.cost), numeric: true },
      // Charged above what was held: the upstream billed more than the request was admitted for.
      { label: 'Overage', cell: (row) => (row.overage === '0' ? '—' : money(row.overage)), numeric: true },
      { label: 'Usage source', cell: (row) => badge(row.usage_source, SOURCE_TONES[row.usage_source] ?? 'neutral') },
      { label: 'Status', cell: (row) => String(row.status), numeric: true },
      { label: 'Outcome', cell: (row) => badge(row.outcome, OUTCOME_TONES[row.outcome] ?? 'neutral') },
      { label: 'Latency', cell: (row) => `${count(row.latency_ms)} ms`, numeric: true },
    ],
  }));
}
