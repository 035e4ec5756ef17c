// /console/admin/orgs — every organisation with its balance and number of members; each one's
// members, their roles and the limits set for them.
import { apiGet } from '../api.js';
import { h, replace } from '../dom.js';
import { loadInto } from '../load.js';
import { memberLimitsCell } from '../org/member-limits.js';
import type { Page, PageContext } from '../page.js';
import { dataTable } from '../table.js';
import type { Member, Organisation } from '../types.js';
import { badge, count, money, pageHeading, section, timeEl } from '../ui.js';

export const adminOrgsPage: Page = {
  title: 'Organisations',
  admin: true,
  render(context: PageContext) {
    const list = h('div');
    const members = h('div', { 'data-testid': 'admin-org-members' });
    const showMembers = (organisation: Organisation) => {
      const heading = h('h2', { tabindex: -1 }, `Members of ${organisation.name}`);
      const table = h('div');
      replace(members, h('section', { class: 'section' }, heading, table));
      heading.focus();
      void loadInto(table,
        () => apiGet<{ members: Member[] }>(`/api/admin/orgs/${organisation.id}/members`, { signal: context.signal }),
        (data) => memberTable(organisation, data.members));
    };
    context.root.append(
      pageHeading('Organisations', 'Accounts that teams spend: their balances and members. Credit or adjust one under Accounts.'),
      section('Every organisation', list),
      members);
    void loadInto(list,
      () => apiGet<{ organisations: Organisation[] }>('/api/admin/orgs', { signal: context.signal }),
      (data) => dataTable({
        caption: 'Organisations',
        hideCaption: true,
        rows: data.organisations,
        emptyText: 'No organisations yet.',
        testId: 'admin-orgs-table',
        columns: [
          { label: 'Organisation', cell: (org) => h('span', null, org.name, ' ', h('code', { class: 'muted' }, org.id)), pin: 'start' },
          { label: 'Balance', cell: (org) => money(org.balance), numeric: true },
          { label: 'Members', cell: (org) => count(org.members ?? 0), numeric: true },
          { label: 'Status', cell: (org) => (org.disabled ? badge('disabled', 'bad') : badge('active', 'good')) },
          { label: 'Created', cell: (org) => timeEl(org.created_at, true) },
          { label: 'Actions', cell: (org) => h('button', { type: 'button', class: 'button button-small', 'aria-label': `Members of ${org.name}`, onclick: () => showMembers(org) }, 'Members'), pin: 'end' },
        ],
      }));
  },
};

function memberTable(organisation: Organisation, members: readonly Member[]): HTMLElement {
  return dataTable({
    caption: `Members of ${organisation.name}`,
    hideCaption: true,
    rows: members,
    emptyText: 'No members.',
    testId: 'admin-members-table',
    columns: [
      { label: 'Member', cell: (member) => h('span', null, member.name, member.email ? ` ${member.email}` : null), pin: 'start' },
      { label: 'Role', cell: (member) => badge(member.role, 'neutral') },
      { label: 'Limits', cell: (member) => memberLimitsCell(member) },
      { label: 'Joined', cell: (member) => timeEl(member.created_at, true) },
    ],
  });
}
