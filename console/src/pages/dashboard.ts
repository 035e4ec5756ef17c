// /console — balance at a glance, budgets this period and their alerts, the last 14 days of spend;
// and, until the account has made its first call, the three steps that get it there. Acting for an
// organisation, its balance and its members' spending instead (org/org-dashboard.ts).
import { actingOrganisationLoaded } from '../acting.js';
import { apiGet } from '../api.js';
import { budgetsSection } from '../budgets.js';
import { dailySpendChart } from '../chart.js';
import { h, replace } from '../dom.js';
import { loadInto } from '../load.js';
import { formatMoney, isZero } from '../money.js';
import { organisationDashboard } from '../org/org-dashboard.js';
import type { Page, PageContext } from '../page.js';
import type { AccountSummary, ApiKey, DailyUsage, Usage } from '../types.js';
import { badge, count, pageHeading, section } from '../ui.js';

const CHART_DAYS = 14;

export const dashboardPage: Page = {
  title: 'Dashboard',
  render(context: PageContext) {
    // The heading now, so the router's focus lands on it; the rest once the organisation is known.
    context.root.append(pageHeading('Dashboard'));
    void actingOrganisationLoaded().then((organisation) => {
      if (organisation === null) personalDashboard(context);
      else organisationDashboard(context, organisation);
    });
  },
};

function personalDashboard(context: PageContext): void {
  const summary = h('div', { class: 'summary' });
  const chart = h('div', { class: 'chart-block' });
  const steps = h('div');
  context.root.append(
    steps,
    summary,
    budgetsSection(context.signal, true),
    section(`Spend, last ${CHART_DAYS} days`, chart));

  const account = apiGet<AccountSummary>('/api/account', { signal: context.signal });
  void loadInto(summary, () => account, summaryCards);
  void firstSteps(account, context.signal).then((section) => replace(steps, section), () => undefined);
  void loadInto(chart,
    () => apiGet<{ days: DailyUsage[] }>(`/api/usage/daily?days=${CHART_DAYS}`, { signal: context.signal }),
    (data) => dailySpendChart(data.days));
}

interface Step {
  done: boolean;
  text: string;
  href: string;
  link: string;
}

/** Top up, create a key, make a first call: shown, each marked done or not, until all three are. */
async function firstSteps(account: Promise<AccountSummary>, signal: AbortSignal): Promise<HTMLElement | null> {
  const [summary, keys, usage] = await Promise.all([
    account,
    apiGet<{ keys: ApiKey[] }>('/api/keys', { signal }),
    apiGet<{ usage: Usage[] }>('/api/usage?limit=1', { signal }),
  ]);
  const steps: Step[] = [
    { done: !isZero(summary.balance) && !summary.balance.startsWith('-'), text: 'Top up your balance', href: '/console/topup', link: 'Top Up' },
    // The Playground's own key is not a key for a program.
    { done: keys.keys.some((key) => key.status === 'active' && !key.playground), text: 'Create a key for your program', href: '/console/token', link: 'Add Token' },
    { done: usage.usage.length > 0, text: 'Make a first call with it: Add Token shows the base URL and snippets for curl, the SDKs, Claude Code and Codex', href: '/console/token', link: 'Tokens' },
  ];
  if (steps.every((step) => step.done)) return null;
  return h('section', { class: 'section first-steps', 'aria-labelledby': 'first-steps-heading', 'data-testid': 'first-steps' },
    h('h2', { id: 'first-steps-heading' }, 'Get started in three steps'),
    h('ol', { class: 'steps' }, steps.map((step) => h('li', { class: step.done ? 'step step-done' : 'step', 'data-testid': 'first-step' },
      step.done ? badge('done', 'good') : null, step.done ? ' ' : null,
      `${step.text}: `, h('a', { href: step.href }, step.link)))));
}

function summaryCards(data: AccountSummary): HTMLElement {
  return h('dl', { class: 'cards' },
    card('Balance', data.balance, 'balance'),
    // Available equals the balance unless something is held: shown only when it says more.
    isZero(data.held) ? null : card('Available', data.available, 'available', `${formatMoney(data.held)} held for requests in progress`),
    card("Today's spend", data.today.cost, 'today-cost', 'Since midnight UTC'),
    h('div', { class: 'card' },
      h('dt', null, "Today's requests"),
      h('dd', { class: 'card-value', 'data-testid': 'today-requests' }, count(data.today.requests))));
}

/** A card of an amount: money to the cent, the exact figure on hover. */
function card(label: string, amount: string, testId: string, note?: string): HTMLElement {
  return h('div', { class: 'card' },
    h('dt', null, label),
    h('dd', { class: 'card-value', 'data-testid': testId, title: amount }, formatMoney(amount)),
    note ? h('dd', { class: 'card-note' }, note) : null);
}
