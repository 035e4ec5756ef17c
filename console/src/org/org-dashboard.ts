// The dashboard acting for an organisation: its balance (every member sees it: it is what their
// keys spend), and the spending a member may read, their own or, for an owner or admin, every
// member's or the one chosen: today's spend and requests, the last 14 days, the newest requests.
import { usageBase } from '../acting.js';
import { apiGet, withQuery } from '../api.js';
import { dailySpendChart } from '../chart.js';
import { h, replace } from '../dom.js';
import { loadInto } from '../load.js';
import { formatMoney, isZero } from '../money.js';
import type { PageContext } from '../page.js';
import { dataTable } from '../table.js';
import type { Organisation, Usage, UsageSummary } from '../types.js';
import { count, money, section, timeEl } from '../ui.js';
import { everyDay, memberOptions, membersToPick, rangeQuery } from '../usage-range.js';

const CHART_DAYS = 14;
const RECENT = 5;

type OrgCharge = Usage & { member_name: string | null };

export function organisationDashboard(context: PageContext, organisation: Organisation): void {
  const signal = { signal: context.signal };
  const base = usageBase(organisation);
  const picker = h('div');
  const cards = h('div', { class: 'summary' });
  const chart = h('div', { class: 'chart-block' });
  const recent = h('div');
  context.root.append(
    h('p', { class: 'lead', 'data-testid': 'dashboard-whose' }, `Acting for ${organisation.name}: its balance, and the spending of its tokens.`),
    picker,
    cards,
    section(`Spend, last ${CHART_DAYS} days`, chart),
    section('Newest requests', recent));

  const show = (memberId: string) => {
    const member = memberId === '' ? undefined : memberId;
    const days = { range: String(CHART_DAYS), member_id: member };
    const daily = apiGet<UsageSummary>(withQuery(`${base}/summary`, { ...rangeQuery(days), group_by: 'day', limit: 400 }), signal).then((data) => everyDay(days, data.rows));
    void loadInto(cards, async () => {
      // Read again, not the header's copy: the balance moves with every member's request.
      const [current, spend] = await Promise.all([apiGet<{ organisation: Organisation }>(`/api/orgs/${encodeURIComponent(organisation.id)}`, signal), daily]);
      return { organisation: current.organisation, today: spend[spend.length - 1] ?? { day: '', requests: 0, cost: '0' } };
    }, ({ organisation: current, today }) => h('dl', { class: 'cards' },
      card('Balance', current.balance ?? '0', 'balance', `${organisation.name}'s, shared by its members`),
      isZero(current.held ?? '0') ? null : card('Held', current.held ?? '0', 'held', 'for requests in progress'),
      card("Today's spend", today.cost, 'today-cost', member === undefined ? 'Since midnight UTC' : 'This member\'s, since midnight UTC'),
      h('div', { class: 'card' }, h('dt', null, "Today's requests"), h('dd', { class: 'card-value', 'data-testid': 'today-requests' }, count(today.requests)))));
    void loadInto(chart, () => daily, (spend) => dailySpendChart(spend));
    void loadInto(recent,
      () => apiGet<{ charges: OrgCharge[] }>(withQuery(base, { member_id: member, limit: RECENT }), signal),
      (data) => dataTable({
        caption: `The newest ${RECENT} requests`,
        hideCaption: true,
        rows: data.charges,
        emptyText: 'No requests yet.',
        testId: 'recent-requests',
        columns: [
          { label: 'Time', pin: 'start', cell: (row) => h('a', { href: withQuery('/console/request', { id: row.request_id }) }, timeEl(row.created_at)) },
          { label: 'Member', cell: (row) => row.member_name ?? '—' },
          { label: 'Token', cell: (row) => row.key_name ?? '—' },
          { label: 'Model', cell: (row) => (row.model === null ? '—' : h('code', null, row.model)) },
          { label: 'Cost', cell: (row) => money(row.cost), numeric: true },
        ],
      }));
  };

  const chosen = context.query.get('member_id') ?? '';
  show(chosen);
  // An owner or admin picks whose spending; a member reads only their own, so is offered none.
  void membersToPick(organisation, context.signal).then((members) => {
    if (members === null) return;
    const select = h('select', { id: 'dashboard-member', 'data-testid': 'dashboard-member', onchange: () => show(select.value) },
      memberOptions(members).map((option) => h('option', { value: option.value, selected: option.value === chosen }, option.label)));
    replace(picker, h('div', { class: 'field' }, h('label', { for: 'dashboard-member' }, 'Spending of'), select));
  });
}

/** A card of an amount: money to the cent, the exact figure on hover. */
function card(label: string, amount: string, testId: string, note: string): HTMLElement {
  return h('div', { class: 'card' },
    h('dt', null, label),
    h('dd', { class: 'card-value', 'data-testid': testId, title: amount }, formatMoney(amount)),
    h('dd', { class: 'card-note' }, note));
}
