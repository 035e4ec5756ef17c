// /console/usage — every request, charged or refused, with filters, totals over every matching
// row, pages by cursor, and the same rows as CSV. Acting for an organisation, its usage by member
// instead (GET /api/orgs/{id}/usage: one's own, or any member's for an owner or admin).
import { actingOrganisationLoaded } from '../acting.js';
import { apiGet, withQuery } from '../api.js';
import { h, replace } from '../dom.js';
import { createForm, FieldError, inputField, selectField, valueOf } from '../forms.js';
import { loadInto } from '../load.js';
import { memberUsageSection } from '../org/member-usage.js';
import type { Page, PageContext } from '../page.js';
import { reasonText, refusedByText } from '../reasons.js';
import { replaceQuery } from '../router.js';
import { isAdmin } from '../session.js';
import { dataTable } from '../table.js';
import type { AdminAccount, ApiKey, Organisation, PricedModel, Usage, UsagePage } from '../types.js';
import { badge, count, money, pageHeading, timeEl, totalMoney, type BadgeTone } from '../ui.js';

const ROW_LIMIT = 100;
const FILTERS = ['account_id', 'key_id', 'model', 'status', 'session_id', 'endpoint', 'since', 'until'] as const;
type Filters = Partial<Record<(typeof FILTERS)[number], string>>;

const STATUS_CHOICES = [
  { value: '', label: 'Any status' },
  { value: 'ok', label: 'Answered' },
  { value: 'failed', label: 'Failed' },
  { value: 'refused', label: 'Refused' },
];
const ENDPOINT_CHOICES = [
  { value: '', label: 'Any endpoint' },
  { value: 'chat', label: 'Chat completions' },
  { value: 'responses', label: 'Responses' },
  { value: 'messages', label: 'Messages' },
  { value: 'count_tokens', label: 'Count tokens' },
  { value: 'images', label: 'Images' },
];

interface FilterChoices {
  keys: ApiKey[];
  models: string[];
  accounts: AdminAccount[] | null;
}

export const usagePage: Page = {
  title: 'Usage',
  render(context: PageContext) {
    // The heading now, so the router's focus lands on it; the rest once the organisation is known.
    const lead = h('span');
    context.root.append(pageHeading('Usage', lead));
    void actingOrganisationLoaded().then((organisation) => {
      if (organisation === null) personalUsage(context, lead);
      else organisationUsage(context, organisation, lead);
    });
  },
};

function organisationUsage(context: PageContext, organisation: Organisation, lead: HTMLElement): void {
  lead.textContent = `Requests made with ${organisation.name}'s tokens, newest first, charged to its balance.`;
  context.root.append(memberUsageSection(organisation, context));
}

function personalUsage(context: PageContext, lead: HTMLElement): void {
  const filterArea = h('div');
  const results = h('div');
  const exportLink = h('a', { class: 'button', download: true }, 'Export CSV');
  lead.textContent = 'Every request made with your tokens, newest first, refused ones included.';
  context.root.append(
    filterArea,
    h('div', { class: 'button-row' }, exportLink),
    results);

  // The cursors of the pages before this one, so Previous can go back.
  let previous: (string | null)[] = [];
  const show = (filters: Filters, cursor: string | null) => {
    exportLink.setAttribute('href', withQuery('/api/usage', { ...filters, format: 'csv' }));
    void loadInto(results,
      () => apiGet<UsagePage>(withQuery('/api/usage', { ...filters, limit: ROW_LIMIT, cursor }), { signal: context.signal }),
      (data) => usageResults(data, {
        older: data.next_cursor === null ? null : () => {
          previous.push(cursor);
          show(filters, data.next_cursor);
        },
        newer: previous.length === 0 ? null : () => show(filters, previous.pop() ?? null),
      }));
  };

  const initial = filtersFrom(context.query);
  show(initial, null);
  void loadFilterChoices(context.signal).then((choices) => {
    replace(filterArea, filterForm(choices, initial, (filters) => {
      previous = [];
      replaceQuery(new URLSearchParams(filters));
      show(filters, null);
    }));
  });
}

function filtersFrom(query: URLSearchParams): Filters {
  const filters: Filters = {};
  for (const name of FILTERS) {
    const value = query.getAll(name).join(',');
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
  const clear = h('button', {
    type: 'button',
    class: 'button',
    onclick: () => {
      clearFields(form);
      apply({});
    },
  }, 'Clear filters');
  const chosenModels = new Set((current.model ?? '').split(',').filter(Boolean));
  const models = h('select', { id: 'usage-models', name: 'model', multiple: true, size: Math.min(6, Math.max(2, choices.models.length)), 'data-error-id': 'usage-models-error' },
    choices.models.map((model) => h('option', { value: model, selected: chosenModels.has(model) }, model)));
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
        options: [{ value: '', label: 'My account' }, { value: 'all', label: 'Every account' }, ...choices.accounts.map((a) => ({ value: a.id, label: a.name }))],
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
      h('div', { class: 'field' },
        h('label', { for: 'usage-models' }, 'Models'),
        h('p', { class: 'hint', id: 'usage-models-hint' }, 'None chosen: every model. Ctrl or ⌘ picks several.'),
        models,
        h('p', { class: 'field-error', id: 'usage-models-error', hidden: true })),
      selectField({ name: 'status', label: 'Status', value: current.status ?? '', options: STATUS_CHOICES }),
      selectField({ name: 'endpoint', label: 'Endpoint', value: current.endpoint ?? '', options: ENDPOINT_CHOICES }),
      inputField({ name: 'session_id', label: 'Session', value: current.session_id ?? '', attrs: { autocomplete: 'off', spellcheck: 'false' } }),
      inputField({ name: 'since', label: 'From (UTC)', type: 'date', value: current.since ?? '' }),
      inputField({ name: 'until', label: 'Until (UTC)', type: 'date', value: current.until ?? '' }),
    ],
    async onSubmit(form) {
      apply(readFilters(form));
    },
  });
  models.setAttribute('aria-describedby', 'usage-models-hint');
  return form;
}

function readFilters(form: HTMLFormElement): Filters {
  const filters: Filters = {};
  for (const name of FILTERS) {
    const value = name === 'model' ? selectedModels(form) : valueOf(form, name);
    if (value) filters[name] = value;
  }
  // `until` is a whole day, so the same day on both sides is that day.
  if (filters.since && filters.until && filters.since > filters.until) {
    throw new FieldError('until', 'The end date is before the start date; choose an end on or after it.');
  }
  return filters;
}

function selectedModels(form: HTMLFormElement): string {
  const select = form.querySelector<HTMLSelectElement>('select[name="model"]');
  return select === null ? '' : [...select.selectedOptions].map((option) => option.value).join(',');
}

function clearFields(form: HTMLFormElement): void {
  for (const element of form.elements) {
    if (element instanceof HTMLInputElement) element.value = '';
    if (element instanceof HTMLSelectElement) {
      if (element.multiple) for (const option of element.options) option.selected = false;
      else element.selectedIndex = 0;
    }
  }
}

const SOURCE_TONES: Record<Usage['usage_source'], BadgeTone> = {
  upstream: 'good', estimated: 'warn', partial: 'warn', none: 'neutral',
};
const OUTCOME_TONES: Record<Usage['outcome'], BadgeTone> = { delivered: 'good', aborted: 'warn', failed: 'bad', refused: 'bad' };

function serviceCell(row: Usage): HTMLElement | string {
  if (!row.long_context) return row.service_tier ?? '—';
  return h('span', null, row.service_tier ?? '', row.service_tier === null ? '' : ' ', badge('long context', 'warn'));
}

/** The status, and for a refused request why, what refused it, and how many it stands for. */
function statusCell(row: Usage): HTMLElement {
  if (row.reason === null) return h('span', { class: 'status-cell' }, String(row.status), ' ', badge(row.outcome, OUTCOME_TONES[row.outcome] ?? 'neutral'));
  const by = refusedByText(row.refused_by);
  return h('span', { class: 'status-cell', 'data-testid': 'refusal' },
    `${row.status} `, badge('refused', 'bad'), ' ',
    h('span', { class: 'refusal-reason' }, reasonText(row.reason), by === null ? '' : ` (${by})`),
    row.count > 1 ? h('span', { class: 'muted' }, ` × ${count(row.count)}`) : null,
    row.reason === 'TOLLGATE_ERR_INSUFFICIENT_BALANCE' ? [' ', h('a', { href: '/console/topup' }, 'Top up')] : null);
}

interface Pager {
  older: (() => void) | null;
  newer: (() => void) | null;
}

function usageResults(data: UsagePage, pager: Pager): HTMLElement {
  const { totals } = data;
  const summary = h('p', { class: 'muted', 'data-testid': 'usage-totals' },
    `${count(totals.requests)} request${totals.requests === 1 ? '' : 's'} match`,
    totals.refused > 0 ? ` (${count(totals.refused)} refused)` : '',
    ', costing ', totalMoney(totals.cost, 'usage-total-cost'), ' in total',
    totals.requests > data.usage.length ? `; this page shows ${count(data.usage.length)}.` : '.');
  return h('div', null, summary, dataTable({
    caption: 'Usage, newest first',
    hideCaption: true,
    rows: data.usage,
    emptyText: 'No requests match these filters.',
    testId: 'usage-table',
    columnsKey: 'usage',
    rowClass: (row) => (row.reason === null ? null : 'row-refused'),
    columns: [
      {
        label: 'Time',
        pin: 'start',
        // A refused request has no charge to open.
        cell: (row) => (row.reason === null ? h('a', { href: `/console/request?id=${encodeURIComponent(row.request_id)}`, title: 'Open this request' }, timeEl(row.created_at)) : timeEl(row.created_at)),
      },
      { label: 'Token', cell: (row) => row.key_name ?? (row.key_id === null ? h('span', { class: 'muted' }, 'no key') : h('code', null, row.key_id)) },
      { label: 'Model', cell: (row) => (row.model === null ? '—' : h('code', null, row.model)) },
      { label: 'Cost', cell: (row) => money(row.cost), numeric: true },
      { label: 'Status', cell: statusCell },
      { label: 'Provider', optional: true, cell: (row) => row.provider ?? '—' },
      { label: 'Endpoint', optional: true, cell: (row) => h('code', null, row.endpoint) },
      { label: 'Input', optional: true, cell: (row) => count(row.input_tokens), numeric: true },
      { label: 'Cache write', optional: true, cell: (row) => count(row.cache_write_tokens + row.cache_write_1h_tokens), numeric: true },
      { label: 'Cache read', optional: true, cell: (row) => count(row.cache_read_tokens), numeric: true },
      { label: 'Output', optional: true, cell: (row) => count(row.output_tokens), numeric: true },
      // Image tokens at the image prices; the images delivered, for a per-image model what was charged.
      { label: 'Image tokens', optional: true, cell: (row) => (row.image_input_tokens + row.image_output_tokens === 0 ? '—' : `${count(row.image_input_tokens)} in, ${count(row.image_output_tokens)} out`), numeric: true },
      { label: 'Images', optional: true, cell: (row) => (row.images === 0 ? '—' : count(row.images)), numeric: true },
      { label: 'Tool calls', optional: true, cell: (row) => (row.tool_calls === '' ? '—' : row.tool_calls) },
      // The premium service the charge was priced at: the reply's tier, and long-context rates.
      { label: 'Service', optional: true, cell: (row) => serviceCell(row) },
      // Charged above what was held: the upstream billed more than the request was admitted for.
      { label: 'Overage', optional: true, cell: (row) => (row.overage === '0' ? '—' : money(row.overage)), numeric: true },
      { label: 'Usage source', optional: true, cell: (row) => badge(row.usage_source, SOURCE_TONES[row.usage_source] ?? 'neutral') },
      { label: 'Latency', optional: true, cell: (row) => (row.latency_ms === null ? '—' : `${count(row.latency_ms)} ms`), numeric: true },
    ],
  }), pagerRow(pager));
}

function pagerRow(pager: Pager): HTMLElement | null {
  if (pager.older === null && pager.newer === null) return null;
  return h('nav', { class: 'button-row pager', 'aria-label': 'Pages' },
    h('button', { type: 'button', class: 'button', disabled: pager.newer === null, onclick: () => pager.newer?.() }, '← Newer'),
    h('button', { type: 'button', class: 'button', disabled: pager.older === null, onclick: () => pager.older?.(), 'data-testid': 'usage-older' }, 'Older →'));
}
