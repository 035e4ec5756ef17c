// /console/admin/gateway — the gateway's totals across accounts: revenue per day,
// the accounts and models that spend most, and each provider's error rate.
import { apiGet, withQuery } from '../api.js';
import { dailySpendChart } from '../chart.js';
import { h, replace } from '../dom.js';
import { loadInto } from '../load.js';
import { sumDecimals } from '../money.js';
import type { Page, PageContext } from '../page.js';
import { replaceQuery } from '../router.js';
import { dataTable } from '../table.js';
import type { RefusalReason, UsageGrouping, UsageSummary } from '../types.js';
import { count, money, pageHeading, section, totalMoney } from '../ui.js';
import { choiceQuery, everyDay, RANGES, rangeFrom, rangeQuery, type RangeChoice } from '../usage-range.js';
import { createForm, inputField, selectField, valueOf } from '../forms.js';
import { groupTable, refusalTable } from './analytics.js';

const TOP = 10;

export const adminGatewayPage: Page = {
  title: 'Gateway totals',
  admin: true,
  render(context: PageContext) {
    const formArea = h('div');
    const totals = h('div');
    const chart = h('div', { class: 'chart-block' });
    const accounts = h('div');
    const models = h('div');
    const providers = h('div');
    const refused = h('div');
    context.root.append(
      pageHeading('Gateway totals', 'Every account together: revenue per day, who and what spends most, and how often each provider fails.'),
      formArea,
      totals,
      section('Revenue per day', chart),
      section(`Top ${TOP} accounts`, accounts),
      section(`Top ${TOP} models`, models),
      section('Error rate by provider', providers),
      section('Refused requests', h('p', { class: 'muted' }, 'Answered with an error before anything was charged, every account and no account (wrong keys) together.'), refused));

    const summary = (choice: RangeChoice, groupBy: UsageGrouping, limit: number) =>
      apiGet<UsageSummary>(withQuery('/api/usage/summary', { ...rangeQuery(choice), account_id: 'all', group_by: groupBy, limit }), { signal: context.signal });

    const show = (choice: RangeChoice) => {
      void loadInto(chart, () => summary(choice, 'day', 400), (data) => {
        const requests = data.rows.reduce((sum, row) => sum + row.requests, 0);
        replace(totals, h('p', { class: 'lead' }, `${count(requests)} requests, `,
          totalMoney(sumDecimals(data.rows.map((row) => row.cost)), 'gateway-revenue'), ' charged in this range.'));
        return dailySpendChart(everyDay(choice, data.rows));
      });
      void loadInto(refused, () => apiGet<{ reasons: RefusalReason[] }>(withQuery('/api/usage/refusals', { ...rangeQuery(choice), account_id: 'all' }), { signal: context.signal }), (data) => refusalTable(data.reasons));
      void loadInto(accounts, () => summary(choice, 'account', TOP), (data) => groupTable('account', data.rows));
      void loadInto(models, () => summary(choice, 'model', TOP), (data) => groupTable('model', data.rows));
      void loadInto(providers, () => summary(choice, 'provider', 100), (data) => dataTable({
        caption: 'Requests and errors by provider',
        hideCaption: true,
        rows: data.rows,
        emptyText: 'No requests in this range.',
        testId: 'by-provider',
        columns: [
          { label: 'Provider', cell: (row) => row.group ?? h('span', { class: 'muted' }, 'none tried') },
          { label: 'Requests', cell: (row) => count(row.requests), numeric: true },
          { label: 'Errors (5xx)', cell: (row) => count(row.errors), numeric: true },
          { label: 'Error rate', cell: (row) => `${((row.errors / Math.max(row.requests, 1)) * 100).toFixed(1)}%`, numeric: true },
          { label: 'Revenue', cell: (row) => money(row.cost), numeric: true },
        ],
      }));
    };

    const initial = rangeFrom(context.query);
    show(initial);
    replace(formArea, createForm({
      label: 'Choose the range',
      className: 'form filters',
      submitLabel: 'Show',
      fields: [
        selectField({ name: 'range', label: 'Range', value: initial.range, options: RANGES.map((r) => ({ value: r.value, label: r.label })) }),
        inputField({ name: 'since', label: 'From (UTC, chosen days)', type: 'date', value: initial.since ?? '' }),
        inputField({ name: 'until', label: 'Until (UTC, chosen days)', type: 'date', value: initial.until ?? '' }),
      ],
      async onSubmit(form) {
        const choice: RangeChoice = { range: valueOf(form, 'range') || '30', since: valueOf(form, 'since') || undefined, until: valueOf(form, 'until') || undefined };
        replaceQuery(choiceQuery(choice));
        show(choice);
      },
    }));
  },
};
