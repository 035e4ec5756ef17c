// /console/account — change password; management tokens for scripts (tgm_…).
import { apiDelete, apiGet, apiPost, apiPut, errorMessage } from '../api.js';
import { confirmAction } from '../confirm.js';
import { h } from '../dom.js';
import { FieldError, createForm, inputField, valueOf } from '../forms.js';
import { loadInto } from '../load.js';
import type { Page, PageContext } from '../page.js';
import { secretReveal } from '../secret.js';
import { currentAccount } from '../session.js';
import { statusLine, type StatusLine } from '../status.js';
import { dataTable } from '../table.js';
import type { ManagementToken } from '../types.js';
import { buttonRow, pageHeading, section, timeEl } from '../ui.js';

const MIN_PASSWORD_LENGTH = 10;

export const accountPage: Page = {
  title: 'Account',
  render(context: PageContext) {
    const account = currentAccount();
    context.root.append(
      pageHeading('Account', account ? `Signed in as ${account.name}${account.email ? ` (${account.email})` : ''}.` : ''),
      section('Change password', passwordForm()),
      tokensSection(context));
  },
};

function passwordForm(): HTMLElement {
  const status = statusLine();
  const form = createForm({
    label: 'Change password',
    submitLabel: 'Change password',
    fields: [
      inputField({ name: 'current_password', label: 'Current password', type: 'password', required: true, attrs: { autocomplete: 'current-password' } }),
      inputField({
        name: 'new_password', label: 'New password', type: 'password', required: true,
        hint: `At least ${MIN_PASSWORD_LENGTH} characters.`,
        attrs: { autocomplete: 'new-password', minlength: MIN_PASSWORD_LENGTH },
      }),
      inputField({ name: 'confirm_password', label: 'Repeat new password', type: 'password', required: true, attrs: { autocomplete: 'new-password' } }),
    ],
    async onSubmit(form) {
      status.clear();
      const newPassword = rawValue(form, 'new_password');
      if (newPassword !== rawValue(form, 'confirm_password')) {
        throw new FieldError('confirm_password', 'The two new passwords are not the same.');
      }
      await apiPut<void>('/api/account/password', { current_password: rawValue(form, 'current_password'), new_password: newPassword });
      form.reset();
      status.show('Password changed.', 'success');
    },
  });
  return h('div', null, form, status.element);
}

/** Password inputs are read untrimmed: spaces can be part of a password. */
function rawValue(form: HTMLFormElement, name: string): string {
  const input = form.elements.namedItem(name);
  return input instanceof HTMLInputElement ? input.value : '';
}

function tokensSection(context: PageContext): HTMLElement {
  const status = statusLine();
  const list = h('div');
  const reveal = h('div');
  const refresh = () => loadInto(list,
    () => apiGet<{ tokens: ManagementToken[] }>('/api/tokens', { signal: context.signal }),
    (data) => tokenTable(data.tokens, (token) => void revokeToken(token, status, refresh)));

  const form = createForm({
    label: 'Create a management token',
    submitLabel: 'Create management token',
    fields: [inputField({ name: 'name', label: 'Token name', required: true, hint: 'e.g. “deploy script”.', attrs: { autocomplete: 'off', maxlength: 100 } })],
    async onSubmit(form) {
      status.clear();
      const created = await apiPost<{ token: ManagementToken; secret: string }>('/api/tokens', { name: valueOf(form, 'name') });
      form.reset();
      showSecret(reveal, created.token, created.secret);
      void refresh();
    },
  });

  void refresh();
  return section('Management tokens',
    h('p', { class: 'muted' }, 'Management tokens let scripts use this API (Authorization: Bearer tgm_…) with your account’s rights. They cannot call models.'),
    form, reveal, status.element, list);
}

function showSecret(container: HTMLElement, token: ManagementToken, secret: string): void {
  const done = h('button', { type: 'button', class: 'button', onclick: () => container.replaceChildren() }, 'Done');
  container.replaceChildren(h('div', { class: 'panel', role: 'group', 'aria-label': `New management token ${token.name}` },
    secretReveal({ label: `Secret for “${token.name}”`, secret, testId: 'new-token-secret' }),
    buttonRow(done)));
  container.querySelector<HTMLInputElement>('[data-testid="new-token-secret"]')?.focus();
}

function tokenTable(tokens: readonly ManagementToken[], onRevoke: (token: ManagementToken) => void): HTMLElement {
  return dataTable({
    caption: 'Your management tokens',
    rows: tokens,
    emptyText: 'No management tokens.',
    testId: 'management-token-table',
    columns: [
      { label: 'Name', cell: (token) => token.name },
      { label: 'Created', cell: (token) => timeEl(token.created_at) },
      {
        label: 'Actions',
        cell: (token) => h('button', {
          type: 'button', class: 'button button-small button-danger', 'aria-label': `Revoke ${token.name}`, onclick: () => onRevoke(token),
        }, 'Revoke'),
      },
    ],
  });
}

async function revokeToken(token: ManagementToken, status: StatusLine, refresh: () => Promise<boolean>): Promise<void> {
  const confirmed = await confirmAction({
    title: `Revoke “${token.name}”?`,
    message: 'Scripts using this management token will be refused from now on.',
    confirmLabel: 'Revoke token',
  });
  if (!confirmed) return;
  try {
    await apiDelete<void>(`/api/tokens/${encodeURIComponent(token.id)}`);
    status.show(`Management token “${token.name}” revoked.`, 'success');
  } catch (error) {
    status.show(`Could not revoke “${token.name}”: ${errorMessage(error)}`, 'error');
  }
  void refresh();
}
