// Usage in an organisation by member: an owner or admin sees every member's spend (a total per
// member, and the requests of one or all), a member only their own. Figures come from
// GET /api/orgs/{id}/usage, whose totals cover every matching row.
import { managesMembers } from '../acting.js';
import { apiGet, withQuery } from '../api.js';
import { h, replace } from '../dom.js';
import { loadInto } from '../load.js';
import type { PageContext } from '../page.js';
import { currentAccount } from '../session.js';
import { dataTable } from '../table.js';
import type { Member, Organisation, Usage } from '../types.js';
import { count, money, timeEl } from '../ui.js';

const ROWS = 100;

interface OrgUsage {
  member_id: string | null;
  totals: { requests: number; cost: string; failed: number };
  charges: Array<Usage & { member_id: string | null; member_name: string | null }>;
}

interface MemberTotal {
  member: Member;
  totals: OrgUsage['totals'];
}

export function memberUsageSection(organisation: Organisation, context: PageContext): HTMLElement {
  const manages = managesMembers(organisation);
  const base = `/api/orgs/${organisation.id}/usage`;
  const totals = h('div');
  const rows = h('div');
  const signal = { signal: context.signal };
  const showRows = (memberId: string) => loadInto(rows,
    () => apiGet<OrgUsage>(withQuery(base, { member_id: memberId, limit: ROWS }), signal),
    (usage) => requestTable(usage));
  const picker = h('select', { id: 'usage-member', 'data-testid': 'usage-member', onchange: () => void showRows(picker.value) });
  if (manages) {
    void loadInto(totals, async () => {
      const members = (await apiGet<{ members: Member[] }>(`/api/orgs/${organisation.id}/members`, signal)).members;
      replace(picker, h('option', { value: '' }, 'Every member'), members.map((member) => h('option', { value: member.account_id }, member.name)));
      return Promise.all(members.map(async (member) => ({
        member,
        totals: (await apiGet<OrgUsage>(withQuery(base, { member_id: member.account_id, limit: 1 }), signal)).totals,
      })));
    }, (byMember) => totalsTable(byMember));
  } else {
    replace(picker, h('option', { value: currentAccount()?.id ?? '' }, 'Your own'));
  }
  void showRows(picker.value);
  return h('section', { class: 'section' },
    h('h2', null, manages ? 'Usage by member' : 'Your usage'),
    totals,
    h('div', { class: 'field' }, h('label', { for: 'usage-member' }, 'Requests of'), picker),
    rows);
}

function totalsTable(byMember: readonly MemberTotal[]): HTMLElement {
  return dataTable({
    caption: 'Spend by member',
    rows: byMember,
    emptyText: 'No members.',
    testId: 'member-totals-table',
    columns: [
      { label: 'Member', cell: (row) => row.member.name, pin: 'start' },
      { label: 'Requests', cell: (row) => count(row.totals.requests), numeric: true },
      { label: 'Failed', cell: (row) => count(row.totals.failed), numeric: true },
      { label: 'Cost', cell: (row) => money(row.totals.cost), numeric: true },
    ],
  });
}

function requestTable(usage: OrgUsage): HTMLElement {
  return h('div', null,
    h('p', null, `${count(usage.totals.requests)} requests, `, money(usage.totals.cost, 'member-usage-cost'), ' in all.'),
    dataTable({
      caption: `Newest ${ROWS} requests`,
      hideCaption: true,
      rows: usage.charges,
      emptyText: 'No requests yet.',
      testId: 'member-usage-table',
      columns: [
        { label: 'Time', cell: (row) => timeEl(row.created_at), pin: 'start' },
        { label: 'Member', cell: (row) => row.member_name ?? '—' },
        { label: 'Token', cell: (row) => row.key_name ?? '—' },
        { label: 'Model', cell: (row) => row.model ?? '—' },
        { label: 'Cost', cell: (row) => money(row.cost), numeric: true },
        { label: 'Status', cell: (row) => String(row.status) },
      ],
    }));
}
