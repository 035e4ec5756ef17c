// Inviting people to an organisation (owners and admins): by name or e-mail, with a role and how
// long the link stays open; the one-time link is shown once with a Copy button; open invitations
// can be revoked.
import { apiDelete, apiGet, apiPost, errorMessage } from '../api.js';
import { h, replace } from '../dom.js';
import { createForm, inputField, selectField, valueOf } from '../forms.js';
import { loadInto } from '../load.js';
import type { PageContext } from '../page.js';
import { secretReveal } from '../secret.js';
import { announce } from '../status.js';
import { dataTable } from '../table.js';
import type { Invitation, NewInvitation, Organisation } from '../types.js';
import { badge, timeEl, type BadgeTone } from '../ui.js';

const STATUS_TONES: Record<Invitation['status'], BadgeTone> = { open: 'good', accepted: 'neutral', revoked: 'neutral', expired: 'warn' };

export function invitationsSection(organisation: Organisation, context: PageContext, onChange: () => void): HTMLElement {
  const list = h('div');
  const made = h('div');
  const base = `/api/orgs/${organisation.id}/invitations`;
  const refresh = () => loadInto(list,
    () => apiGet<{ invitations: Invitation[] }>(base, { signal: context.signal }),
    (data) => invitationTable(data.invitations.filter((invitation) => invitation.status === 'open'), async (invitation) => {
      try {
        await apiDelete(`${base}/${invitation.id}`);
        announce(`The invitation for ${invitation.invitee} is revoked.`);
      } catch (error) {
        announce(`Could not revoke it: ${errorMessage(error)}`);
      }
      void refresh();
    }));
  const form = createForm({
    label: 'Invite a person',
    submitLabel: 'Invite',
    fields: [
      inputField({ name: 'invitee', label: 'Name or e-mail', required: true, attrs: { autocomplete: 'off', maxlength: 254 } }),
      selectField({ name: 'role', label: 'Role', value: 'member', options: (organisation.role === 'owner' ? ['member', 'billing', 'admin', 'owner'] : ['member', 'billing', 'admin']).map((role) => ({ value: role, label: role })) }),
      inputField({ name: 'expires_in_days', label: 'Open for (days)', type: 'number', value: 7, required: true, attrs: { min: 1, max: 30, step: 1, inputmode: 'numeric' } }),
    ],
    async onSubmit(submitted) {
      const answer = await apiPost<NewInvitation>(base, {
        invitee: valueOf(submitted, 'invitee'),
        role: valueOf(submitted, 'role'),
        expires_in_days: Number.parseInt(valueOf(submitted, 'expires_in_days'), 10),
      });
      submitted.reset();
      showLink(made, answer);
      onChange();
      void refresh();
    },
  });
  void refresh();
  return h('section', { class: 'section' },
    h('h2', null, 'Invitations'),
    form, made,
    h('h3', null, 'Open invitations'), list);
}

function showLink(container: HTMLElement, answer: NewInvitation): void {
  const link = new URL(answer.link, window.location.origin).toString();
  replace(container, h('div', { class: 'panel', role: 'group', 'aria-label': 'New invitation', 'data-testid': 'new-invitation' },
    h('p', null, `Send this link to ${answer.invitation.invitee}. It works once, for them only, until `, timeEl(answer.invitation.expires_at), '.'),
    secretReveal({ label: 'Invitation link', secret: link, testId: 'invitation-link' })));
  announce(`Invitation made for ${answer.invitation.invitee}.`);
}

function invitationTable(invitations: readonly Invitation[], revoke: (invitation: Invitation) => Promise<void>): HTMLElement {
  return dataTable({
    caption: 'Open invitations',
    hideCaption: true,
    rows: invitations,
    emptyText: 'No open invitations.',
    testId: 'invitations-table',
    columns: [
      { label: 'Invited', cell: (invitation) => invitation.invitee, pin: 'start' },
      { label: 'Role', cell: (invitation) => invitation.role },
      { label: 'Status', cell: (invitation) => badge(invitation.status, STATUS_TONES[invitation.status]) },
      { label: 'Expires', cell: (invitation) => timeEl(invitation.expires_at) },
      { label: 'Actions', cell: (invitation) => h('button', { type: 'button', class: 'button button-small button-danger', 'aria-label': `Revoke the invitation for ${invitation.invitee}`, onclick: () => void revoke(invitation) }, 'Revoke'), pin: 'end' },
    ],
  });
}
