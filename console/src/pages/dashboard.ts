// /console — balance at a glance, budgets this period and their alerts, the last 14 days of spend.
import { apiGet } from '../api.js';
import { budgetsSection } from '../budgets.js';
import { dailySpendChart } from '../chart.js';
import { h } from '../dom.js';
import { loadInto } from '../load.js';
import { formatMoney, isZero } from '../money.js';
import type { Page, PageContext } from '../page.js';
import type { AccountSummary, DailyUsage } from '../types.js';
import { count, pageHeading, section } from '../ui.js';

const CHART_DAYS = 14;

export const dashboardPage: Page = {
  title: 'Dashboard',
  render(context: PageContext) {
    const summary = h('div', { class: 'summary' });
    const chart = h('div', { class: 'chart-block' });
    context.root.append(
      pageHeading('Dashboard'),
      summary,
      budgetsSection(context.signal, true),
      section(`Spend, last ${CHART_DAYS} days`, chart));

    void loadInto(summary, () => apiGet<AccountSummary>('/api/account', { signal: context.signal }), summaryCards);
    void loadInto(chart,
      () => apiGet<{ days: DailyUsage[] }>(`/api/usage/daily?days=${CHART_DAYS}`, { signal: context.signal }),
      (data) => dailySpendChart(data.days));
  },
};

function summaryCards(data: AccountSummary): HTMLElement {
  return h('dl', { class: 'cards' },
    card('Balance', formatMoney(data.balance), 'balance'),
    card('Available', formatMoney(data.available), 'available',
      !isZero(data.held) ? `${formatMoney(data.held)} held for requests in progress` : 'Balance less amounts held for requests in progress'),
    card("Today's spend", formatMoney(data.today.cost), 'today-cost', 'Since midnight UTC'),
    card("Today's requests", count(data.today.requests), 'today-requests'));
}

function card(label: string, value: string, testId: string, note?: string): HTMLElement {
  return h('div', { class: 'card' },
    h('dt', null, label),
    h('dd', { class: 'card-value', 'data-testid': testId }, value),
    note ? h('dd', { class: 'card-note' }, note) : null);
}
