// /console/members — the organisation chosen in the header: its balance, its members with their
// roles (an owner or admin changes them, sets each one's limits, removes them), invitations, and
// usage by member. Acting for one's personal account, it lists one's organisations and makes one.
import { actFor, actingOrganisationLoaded, managesMembers, organisationsLoaded } from '../acting.js';
import { apiDelete, apiGet, apiPatch, apiPost, errorMessage } from '../api.js';
import { confirmAction } from '../confirm.js';
import { h, replace } from '../dom.js';
import { createForm, inputField, valueOf } from '../forms.js';
import { loadInto } from '../load.js';
import { memberLimitsCell, memberLimitsEditor } from '../org/member-limits.js';
import { invitationsSection } from '../org/invitations.js';
import { memberUsageSection } from '../org/member-usage.js';
import type { Page, PageContext } from '../page.js';
import { reload } from '../router.js';
import { currentAccount } from '../session.js';
import { announce } from '../status.js';
import { dataTable } from '../table.js';
import type { Member, MemberRole, Organisation } from '../types.js';
import { badge, money, pageHeading, section, timeEl } from '../ui.js';

const ROLES: readonly MemberRole[] = ['owner', 'admin', 'billing', 'member'];

export const membersPage: Page = {
  title: 'Members',
  render(context: PageContext) {
    const body = h('div');
    context.root.append(body);
    void actingOrganisationLoaded().then((organisation) => {
      if (organisation === null) void personalView(body, context);
      else organisationView(body, organisation, context);
    });
  },
};

async function personalView(body: HTMLElement, context: PageContext): Promise<void> {
  const organisations = await organisationsLoaded();
  replace(body,
    pageHeading('Organisations', 'An organisation is one wallet a team spends; choose one in the header to see its members.'),
    section('Your organisations', dataTable({
      caption: 'Your organisations',
      hideCaption: true,
      rows: organisations,
      emptyText: 'You belong to no organisation yet.',
      testId: 'my-orgs-table',
      columns: [
        { label: 'Organisation', cell: (org) => org.name, pin: 'start' },
        { label: 'Your role', cell: (org) => badge(org.role ?? 'member', 'neutral') },
        { label: 'Balance', cell: (org) => money(org.balance), numeric: true },
        { label: '', cell: (org) => h('button', { type: 'button', class: 'button button-small', onclick: () => { actFor(org.id); reload(); } }, `Act for ${org.name}`), pin: 'end' },
      ],
    })),
    section('Make an organisation', createForm({
      label: 'Make an organisation',
      submitLabel: 'Make organisation',
      fields: [inputField({ name: 'name', label: 'Name', required: true, attrs: { autocomplete: 'off', maxlength: 60 } })],
      async onSubmit(form) {
        const made = await apiPost<{ organisation: Organisation }>('/api/orgs', { name: valueOf(form, 'name') }, { signal: context.signal });
        announce(`${made.organisation.name} made; you are its owner.`);
        actFor(made.organisation.id);
        reload();
      },
    })));
}

function organisationView(body: HTMLElement, organisation: Organisation, context: PageContext): void {
  const manages = managesMembers(organisation);
  const members = h('div');
  const editor = h('div');
  const refresh = () => loadInto(members,
    () => apiGet<{ members: Member[] }>(`/api/orgs/${organisation.id}/members`, { signal: context.signal }),
    (data) => memberTable(organisation, data.members, { refresh, edit: (member) => editLimits(member) }));
  const editLimits = (member: Member) => {
    replace(editor, memberLimitsEditor(organisation, member, () => {
      editor.replaceChildren();
      void refresh();
    }));
    editor.querySelector<HTMLElement>('h3')?.focus();
  };
  replace(body,
    pageHeading(organisation.name, `You are ${article(organisation.role)} ${organisation.role ?? 'member'} of this organisation.`),
    h('p', { class: 'lead' }, 'Balance: ', money(organisation.balance, 'org-balance')),
    section('Members', members, editor),
    manages ? invitationsSection(organisation, context, () => void refresh()) : null,
    memberUsageSection(organisation, context));
  void refresh();
}

function article(role: MemberRole | null): string {
  return role === 'owner' || role === 'admin' ? 'an' : 'a';
}

interface MemberActions {
  refresh(): Promise<boolean>;
  edit(member: Member): void;
}

function memberTable(organisation: Organisation, members: readonly Member[], actions: MemberActions): HTMLElement {
  const manages = managesMembers(organisation);
  const me = currentAccount()?.id;
  return dataTable({
    caption: `Members of ${organisation.name}`,
    hideCaption: true,
    rows: members,
    emptyText: 'No members.',
    testId: 'members-table',
    columns: [
      { label: 'Member', cell: (member) => h('span', null, member.name, member.email ? h('span', { class: 'muted' }, ` ${member.email}`) : null), pin: 'start' },
      { label: 'Role', cell: (member) => (manages && member.account_id !== me ? roleSelect(organisation, member, actions) : badge(member.role, 'neutral')) },
      { label: 'Limits', cell: (member) => memberLimitsCell(member) },
      { label: 'Joined', cell: (member) => timeEl(member.created_at, true) },
      manages || members.some((member) => member.account_id === me)
        ? { label: 'Actions', cell: (member) => memberButtons(organisation, member, actions, me), pin: 'end' as const }
        : null,
    ],
  });
}

function roleSelect(organisation: Organisation, member: Member, actions: MemberActions): HTMLElement {
  const label = `Role of ${member.name}`;
  const select = h('select', {
    'aria-label': label,
    'data-testid': `role-${member.name}`,
    onchange: async () => {
      try {
        await apiPatch(`/api/orgs/${organisation.id}/members/${member.account_id}`, { role: select.value });
        announce(`${member.name} is now ${select.value}.`);
        await actions.refresh();
      } catch (error) {
        select.value = member.role;
        announce(`Could not change ${member.name}'s role: ${errorMessage(error)}`);
        select.setAttribute('aria-invalid', 'true');
        select.after(h('p', { class: 'field-error', role: 'alert', 'data-testid': 'role-error' }, errorMessage(error)));
      }
    },
  }, ROLES.map((role) => h('option', { value: role, selected: role === member.role }, role)));
  return select;
}

function memberButtons(organisation: Organisation, member: Member, actions: MemberActions, me: string | undefined): HTMLElement | string {
  const leaving = member.account_id === me;
  const manages = managesMembers(organisation);
  if (!leaving && !manages) return '';
  const remove = h('button', {
    type: 'button',
    class: 'button button-small button-danger',
    'aria-label': leaving ? `Leave ${organisation.name}` : `Remove ${member.name}`,
    onclick: async () => {
      const ok = await confirmAction({
        title: leaving ? `Leave ${organisation.name}?` : `Remove ${member.name}?`,
        message: leaving
          ? `Your keys in ${organisation.name} stop working at once.`
          : `${member.name}'s keys in ${organisation.name} stop working at once, on every instance.`,
        confirmLabel: leaving ? 'Leave' : 'Remove',
      });
      if (!ok) return;
      try {
        await apiDelete(`/api/orgs/${organisation.id}/members/${member.account_id}`);
        announce(leaving ? `You left ${organisation.name}.` : `${member.name} removed.`);
        if (leaving) {
          actFor(null);
          reload();
        } else await actions.refresh();
      } catch (error) {
        remove.after(h('p', { class: 'field-error', role: 'alert' }, errorMessage(error)));
      }
    },
  }, leaving ? 'Leave' : 'Remove');
  const limits = manages ? h('button', { type: 'button', class: 'button button-small', 'aria-label': `Limits of ${member.name}`, onclick: () => actions.edit(member) }, 'Limits') : null;
  return h('span', { class: 'button-row' }, limits, remove);
}
