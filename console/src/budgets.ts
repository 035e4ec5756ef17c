// Budgets: each one's spend this period as a bar with its reset time, the banner for alerts of the
// current periods (a low balance with the balance as it is now and a Top up link, gone once topped
// up above the threshold), and the alert history. The dashboard and the Tokens page show them.
import { apiGet } from './api.js';
import { h } from './dom.js';
import { loadInto } from './load.js';
import { commonScale, formatMoney, toScaled } from './money.js';
import { formatDateTime } from './time.js';
import type { AccountSummary, BudgetAlert, BudgetSpend } from './types.js';
import { badge, section } from './ui.js';

const PERIOD_WORDS = { day: 'Daily', week: 'Weekly', month: 'Monthly' } as const;

interface BudgetsData {
  budgets: BudgetSpend[];
  alerts: BudgetAlert[];
  /** The balance now (GET /api/account), for the low-balance line; null if it could not be read. */
  balance: string | null;
}

/** The budgets section (bars, banner, and with `history` the alert history); nothing when there are none. */
export function budgetsSection(signal: AbortSignal, history: boolean): HTMLElement {
  const holder = h('div', { 'data-testid': 'budgets' });
  void loadInto(holder, async () => {
    const [budgets, account] = await Promise.all([
      apiGet<Omit<BudgetsData, 'balance'>>('/api/budgets', { signal }),
      apiGet<AccountSummary>('/api/account', { signal }).catch(() => null),
    ]);
    return { ...budgets, balance: account?.balance ?? null };
  }, (data) => budgetsView(data, history));
  return holder;
}

function budgetsView(data: BudgetsData, history: boolean): HTMLElement {
  const now = Date.now();
  // An alert is current while its budget period lasts (a balance alert for a day).
  const current = data.alerts.filter((alert) => Date.parse(alert.event.resets_at ?? alert.created_at) + (alert.event.resets_at ? 0 : 86_400_000) > now);
  const budgetAlerts = current.filter((alert) => alert.kind !== 'balance');
  const low = lowBalanceLine(current, data.balance);
  return h('div', null,
    budgetAlerts.length > 0 || low !== null
      ? h('div', { class: 'notice notice-warn', role: 'alert', 'data-testid': 'budget-banner' }, low, ...budgetAlerts.map((alert) => h('p', null, alertText(alert))))
      : null,
    data.budgets.length > 0 ? section('Budgets', ...data.budgets.map((budget) => budgetBar(budget, isBlocked(budget, current)))) : null,
    history && data.alerts.length > 0 ? section('Alerts', alertTable(data.alerts)) : null);
}

/** Whether an alert of the current period says this budget refused a request. */
function isBlocked(budget: BudgetSpend, current: readonly BudgetAlert[]): boolean {
  return current.some((alert) => alert.event.blocked === true && alert.event.resets_at === budget.resets_at
    && alert.event.budget?.scope === budget.scope && (budget.scope === 'account' ? alert.event.key_id === null : alert.event.key_id === budget.id));
}

function budgetBar(budget: BudgetSpend, blocked: boolean): HTMLElement {
  const scale = commonScale([budget.amount, budget.spent]);
  const amount = toScaled(budget.amount, scale);
  const spent = toScaled(budget.spent, scale);
  const percent = amount === 0n ? 100 : Number((spent * 1000n) / amount) / 10;
  const owner = budget.scope === 'account' ? `Account${budget.role_default ? ' (default for its role)' : ''}` : `Key ${budget.name ?? budget.id}`;
  const fill = h('div', { class: `budget-fill${blocked || percent >= 100 ? ' budget-full' : percent >= 80 ? ' budget-high' : ''}` });
  // Through the CSSOM: the console's content security policy refuses style attributes.
  fill.style.width = `${Math.min(100, percent)}%`;
  const label = `${owner}: ${PERIOD_WORDS[budget.period].toLowerCase()} budget of ${formatMoney(budget.amount)} (${budget.timezone})`;
  return h('div', { class: 'budget', 'data-testid': `budget-${budget.scope}-${budget.id}` },
    h('div', { class: 'budget-label' }, label),
    h('div', { class: 'budget-track', role: 'progressbar', 'aria-label': label, 'aria-valuemin': '0', 'aria-valuemax': '100', 'aria-valuenow': String(Math.min(100, Math.round(percent))) }, fill),
    blocked || percent >= 100
      ? h('div', { class: 'budget-note budget-blocked', 'data-testid': 'budget-blocked' }, badge('blocked', 'bad'),
        ` until it resets ${formatDateTime(budget.resets_at)}: ${formatMoney(budget.spent)} spent (${percent.toFixed(1)}%), not enough left for the next request.`)
      : h('div', { class: 'budget-note' }, `${formatMoney(budget.spent)} spent (${percent.toFixed(1)}%) · resets ${formatDateTime(budget.resets_at)}`));
}

/**
 * One line for the balance alerts of the last day, with the balance as it is now: none once the
 * balance is back at or above the threshold (a top-up since), however many alerts fired.
 */
function lowBalanceLine(current: readonly BudgetAlert[], balance: string | null): HTMLElement | null {
  const latest = current.find((alert) => alert.kind === 'balance' && alert.event.low_balance !== undefined);
  const threshold = latest?.event.low_balance;
  if (latest === undefined || threshold === undefined) return null;
  const now = balance ?? latest.event.balance ?? '0';
  const scale = commonScale([now, threshold]);
  if (toScaled(now, scale) >= toScaled(threshold, scale)) return null;
  return h('p', { 'data-testid': 'low-balance' },
    `Your balance is ${formatMoney(now)}, below the alert threshold of ${formatMoney(threshold)}; paid requests are refused once it cannot cover them. `,
    h('a', { href: '/console/topup', class: 'notice-action' }, 'Top up'));
}

function alertText(alert: BudgetAlert): string {
  const { event } = alert;
  if (alert.kind === 'balance') return `Balance ${formatMoney(event.balance)} fell below ${formatMoney(event.low_balance)} (${formatDateTime(alert.created_at)}).`;
  const budget = event.budget;
  if (event.blocked === true) {
    const whose = budget?.scope === 'key' ? 'A key\'s' : 'The account\'s';
    return `${whose} ${budget === undefined ? '' : `${PERIOD_WORDS[budget.period].toLowerCase()} `}budget of ${formatMoney(budget?.amount)} refused a request: it is blocked until ${formatDateTime(event.resets_at)} (${formatMoney(event.spent)} spent).`;
  }
  const owner = budget?.scope === 'key' ? 'A key' : 'The account';
  const period = budget === undefined ? '' : `${PERIOD_WORDS[budget.period].toLowerCase()} `;
  return `${owner} reached ${event.threshold_percent ?? '?'}% of its ${period}budget of ${formatMoney(budget?.amount)}: ${formatMoney(event.spent)} spent; it resets ${formatDateTime(event.resets_at)}.`;
}

function alertTable(alerts: readonly BudgetAlert[]): HTMLElement {
  return h('table', { class: 'table', 'data-testid': 'alert-history' },
    h('thead', null, h('tr', null, h('th', null, 'When'), h('th', null, 'Alert'))),
    h('tbody', null, ...alerts.map((alert) => h('tr', null, h('td', null, formatDateTime(alert.created_at)), h('td', null, alertText(alert))))));
}
