// /console/admin/gateway — the gateway's totals across accounts: usage charged per day beside the
// money received and taken back, what it cost upstream and the margin, the accounts and models that
// spend most, each provider's error rate.
import { apiGet, withQuery } from '../api.js';
import { dailySpendChart } from '../chart.js';
import { h, replace } from '../dom.js';
import { loadInto } from '../load.js';
import { sumDecimals } from '../money.js';
import type { Page, PageContext } from '../page.js';
import { replaceQuery } from '../router.js';
import { dataTable } from '../table.js';
import type { MoneyTotals, RefusalReason, UsageGrouping, UsageSummary } from '../types.js';
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
    const moneyBlock = h('div');
    const chart = h('div', { class: 'chart-block' });
    const accounts = h('div');
    const models = h('div');
    const providers = h('div');
    const refused = h('div');
    context.root.append(
      pageHeading('Gateway totals', 'Every account together: usage charged and money received, who and what spends most, and how often each provider fails.'),
      formArea,
      totals,
      section('Money in and out', h('p', { class: 'muted' }, 'Usage charged is what accounts spent; money received is what card payments brought in, less refunds and lost disputes. Outstanding is what accounts hold now, unspent.'), moneyBlock),
      section('Usage charged per day', chart),
      section(`Top ${TOP} accounts`, accounts),
      section(`Top ${TOP} models`, models),
      section('Error rate by provider', providers),
      section('Refused requests', h('p', { class: 'muted' }, 'Answered with an error before anything was charged, every account and no account (wrong keys) together.'), refused));

    const summary = (choice: RangeChoice, groupBy: UsageGrouping, limit: number) =>
      apiGet<UsageSummary>(withQuery('/api/usage/summary', { ...rangeQuery(choice), account_id: 'all', group_by: groupBy, limit }), { signal: context.signal });

    const show = (choice: RangeChoice) => {
      void loadInto(chart, () => summary(choice, 'day', 400), (data) => {
        const requests = data.rows.reduce((sum, row) => sum + row.requests, 0);
        const uncosted = data.rows.reduce((sum, row) => sum + (row.uncosted_requests ?? 0), 0);
        replace(totals,
          h('p', { class: 'lead' }, `${count(requests)} requests, `,
            totalMoney(sumDecimals(data.rows.map((row) => row.cost)), 'gateway-revenue'), ' charged in this range.'),
          // Margin is over the requests of known upstream cost only (docs/billing.md), so the unknown ones are said.
          h('p', {}, 'Upstream cost ', totalMoney(sumDecimals(data.rows.map((row) => row.upstream_cost ?? '0')), 'gateway-cost'),
            ', margin ', totalMoney(sumDecimals(data.rows.map((row) => row.margin ?? '0')), 'gateway-margin'),
            uncosted === 0 ? '.' : `, leaving out ${count(uncosted)} requests of unknown cost.`));
        return dailySpendChart(everyDay(choice, data.rows));
      });
      void loadInto(moneyBlock, () => apiGet<MoneyTotals>(withQuery('/api/admin/money', rangeQuery(choice)), { signal: context.signal }), moneyTable);
      void loadInto(refused, () => apiGet<{ reasons: RefusalReason[] }>(withQuery('/api/usage/refusals', { ...rangeQuery(choice), account_id: 'all' }), { signal: context.signal }), (data) => refusalTable(data.reasons));
      void loadInto(accounts, () => summary(choice, 'account', TOP), (data) => groupTable('account', data.rows, { upstream: true }));
      void loadInto(models, () => summary(choice, 'model', TOP), (data) => groupTable('model', data.rows, { upstream: true }));
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
          { label: 'Usage charged', cell: (row) => money(row.cost), numeric: true },
          { label: 'Upstream cost', cell: (row) => money(row.upstream_cost ?? '0'), numeric: true },
          { label: 'Margin', cell: (row) => money(row.margin ?? '0'), numeric: true },
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

const MONEY_LINES: readonly [label: string, field: keyof Omit<MoneyTotals, 'since' | 'until' | 'requests'>][] = [
  ['Usage charged', 'usage_charged'],
  ['Card payments', 'card_payments'],
  ['Refunds', 'refunds'],
  ['Disputes', 'disputes'],
  ['Disputes won back', 'disputes_won'],
  ['Money received (payments − refunds − disputes + won)', 'received'],
  ['Credited by administrators', 'admin_credits'],
  ['Redemption codes redeemed', 'redemptions'],
  ['Adjustments down', 'adjustments'],
  ['Outstanding balances (now)', 'outstanding'],
  ['Owed by accounts below zero (now)', 'owed_by_accounts'],
];

function moneyTable(totals: MoneyTotals): HTMLElement {
  return dataTable({
    caption: 'Money in and out',
    hideCaption: true,
    rows: MONEY_LINES,
    emptyText: '',
    testId: 'gateway-money',
    columns: [
      { label: 'What', cell: ([label]) => label },
      { label: 'Amount', cell: ([, field]) => money(totals[field]), numeric: true },
    ],
  });
}
