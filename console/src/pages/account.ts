// /console/account — change password; two-factor sign-in; signed-in sessions; management tokens for scripts (tgm_…).
import { ApiError, apiDelete, apiGet, apiPost, apiPut, errorMessage } from '../api.js';
import { confirmAction } from '../confirm.js';
import { h } from '../dom.js';
import { FieldError, createForm, inputField, valueOf } from '../forms.js';
import { loadInto } from '../load.js';
import type { Page, PageContext } from '../page.js';
import { secretReveal } from '../secret.js';
import { currentAccount } from '../session.js';
import { statusLine, type StatusLine } from '../status.js';
import { dataTable } from '../table.js';
import type { ConsoleSession, ManagementToken, TwoFactorEnrolment, TwoFactorState } from '../types.js';
import { buttonRow, pageHeading, section, timeEl } from '../ui.js';

const MIN_PASSWORD_LENGTH = 10;

export const accountPage: Page = {
  title: 'Account',
  render(context: PageContext) {
    const account = currentAccount();
    context.root.append(
      pageHeading('Account', account ? `Signed in as ${account.name}${account.email ? ` (${account.email})` : ''}.` : ''),
      section('Change password', passwordForm()),
      twoFactorSection(context),
      sessionsSection(context),
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
      codeField('password_code'),
    ],
    async onSubmit(form) {
      status.clear();
      const newPassword = rawValue(form, 'new_password');
      if (newPassword !== rawValue(form, 'confirm_password')) {
        throw new FieldError('confirm_password', 'The two new passwords are not the same.');
      }
      await withCodeField('password_code', () =>
        apiPut<void>('/api/account/password', { current_password: rawValue(form, 'current_password'), new_password: newPassword, ...codeOf(form, 'password_code') }));
      form.reset();
      status.show('Password changed.', 'success');
    },
  });
  return h('div', null, form, status.element);
}

/**
 * The current two-factor code a change asks for beside the password when two-factor sign-in is on
 * (turning it off, a management token, a new password); left empty when it is off.
 */
function codeField(name: string, required = false): HTMLElement {
  return inputField({
    name, label: required ? 'Two-factor code' : 'Two-factor code (if on)', required,
    hint: 'The 6-digit code from your authenticator app, or a recovery code.',
    attrs: { autocomplete: 'one-time-code', maxlength: 64 },
  });
}

function codeOf(form: HTMLFormElement, name: string): { code?: string } {
  const code = valueOf(form, name);
  return code === '' ? {} : { code };
}

/** Runs `send`, showing a refused or missing code beside the form's code field. */
async function withCodeField<T>(name: string, send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (error) {
    if (error instanceof ApiError && error.field === 'code') throw new FieldError(name, error.message);
    throw error;
  }
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
    fields: [
      inputField({ name: 'name', label: 'Token name', required: true, hint: 'e.g. “deploy script”.', attrs: { autocomplete: 'off', maxlength: 100 } }),
      inputField({ name: 'expires_in_days', label: 'Expires after (days)', type: 'number', value: '90', attrs: { min: 1, max: 366, step: 1 } }),
      inputField({ name: 'token_password', label: 'Your password', type: 'password', required: true, attrs: { autocomplete: 'current-password' } }),
      codeField('token_code'),
    ],
    async onSubmit(form) {
      status.clear();
      const days = Number.parseInt(valueOf(form, 'expires_in_days') || '90', 10);
      let created: { token: ManagementToken; secret: string };
      try {
        created = await withCodeField('token_code', () => apiPost<{ token: ManagementToken; secret: string }>('/api/tokens', {
          name: valueOf(form, 'name'), password: rawValue(form, 'token_password'), expires_in_days: days, ...codeOf(form, 'token_code'),
        }));
      } catch (error) {
        if (error instanceof ApiError && error.field === 'password') throw new FieldError('token_password', error.message);
        throw error;
      }
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
      { label: 'Expires', cell: (token) => (token.expires_at ? timeEl(token.expires_at) : 'Never') },
      { label: 'Last used', cell: (token) => (token.last_used_at ? timeEl(token.last_used_at) : 'Never') },
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

/** Two-factor sign-in: its state, enrolling (QR code, first code, recovery codes shown once), turning it off. */
function twoFactorSection(context: PageContext): HTMLElement {
  const status = statusLine();
  const body = h('div', { 'data-testid': 'two-factor' });
  const refresh = () => loadInto(body,
    () => apiGet<TwoFactorState>('/api/account/2fa', { signal: context.signal }),
    (state) => (state.enabled ? enabledView(state) : startView(state)));

  function enabledView(state: TwoFactorState): HTMLElement {
    const form = createForm({
      label: 'Turn off two-factor sign-in',
      submitLabel: 'Turn off',
      fields: [
        inputField({ name: 'off_password', label: 'Your password', type: 'password', required: true, attrs: { autocomplete: 'current-password' } }),
        codeField('off_code', true),
      ],
      async onSubmit(form) {
        await withCodeField('off_code', () => apiDelete<void>('/api/account/2fa', undefined, { password: rawValue(form, 'off_password'), ...codeOf(form, 'off_code') }));
        status.show('Two-factor sign-in is off.', 'success');
        void refresh();
      },
    });
    return h('div', null,
      h('p', { 'data-testid': 'two-factor-state' }, `On. ${state.recovery_codes_left} recovery codes left.`),
      state.required ? h('p', { class: 'muted' }, 'Required for this account.') : form);
  }

  function startView(state: TwoFactorState): HTMLElement {
    const form = createForm({
      label: 'Set up two-factor sign-in',
      submitLabel: 'Set up',
      fields: [inputField({ name: 'setup_password', label: 'Your password', type: 'password', required: true, attrs: { autocomplete: 'current-password' } })],
      async onSubmit(form) {
        const enrolment = await apiPost<TwoFactorEnrolment>('/api/account/2fa', { password: rawValue(form, 'setup_password') });
        body.replaceChildren(confirmView(enrolment));
      },
    });
    return h('div', null,
      state.required ? h('p', { class: 'notice notice-info', role: 'status', 'data-testid': 'enrol-required' }, 'This account must sign in with a second factor: set it up to use the console.') : null,
      h('p', { 'data-testid': 'two-factor-state' }, 'Off.'),
      form);
  }

  function confirmView(enrolment: TwoFactorEnrolment): HTMLElement {
    const form = createForm({
      label: 'Confirm two-factor sign-in',
      submitLabel: 'Turn on',
      fields: [inputField({ name: 'first_code', label: 'The 6-digit code the app shows', required: true, attrs: { autocomplete: 'one-time-code', inputmode: 'numeric', maxlength: 6 } })],
      async onSubmit(form) {
        let codes: string[];
        try {
          codes = (await apiPost<{ recovery_codes: string[] }>('/api/account/2fa/confirm', { code: valueOf(form, 'first_code') })).recovery_codes;
        } catch (error) {
          if (error instanceof ApiError && error.field === 'code') throw new FieldError('first_code', error.message);
          throw error;
        }
        body.replaceChildren(h('div', null,
          h('p', null, 'Two-factor sign-in is on. Keep these recovery codes somewhere safe: each signs you in once without the app. They are shown only now.'),
          h('ul', { 'data-testid': 'recovery-codes' }, ...codes.map((code) => h('li', null, h('code', null, code)))),
          buttonRow(h('button', { type: 'button', class: 'button', onclick: () => void refresh() }, 'Done'))));
      },
    });
    return h('div', null,
      h('p', null, 'Scan this code with an authenticator app, or type the key by hand, then enter the code it shows.'),
      qrCode(enrolment.qr),
      h('p', null, 'Key: ', h('code', { 'data-testid': 'totp-secret' }, enrolment.secret)),
      form);
  }

  void refresh();
  return section('Two-factor sign-in', body, status.element);
}

/** The QR code drawn from its modules with SVG elements: no image or HTML string involved. */
function qrCode(qr: { size: number; modules: string }): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  const quiet = 4;
  const side = qr.size + 2 * quiet;
  svg.setAttribute('viewBox', `0 0 ${side} ${side}`);
  svg.setAttribute('width', String(side * 4));
  svg.setAttribute('height', String(side * 4));
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', 'QR code for the authenticator app');
  svg.setAttribute('data-testid', 'totp-qr');
  const background = document.createElementNS(ns, 'rect');
  background.setAttribute('width', String(side));
  background.setAttribute('height', String(side));
  background.setAttribute('fill', '#fff');
  svg.append(background);
  let path = '';
  for (let row = 0; row < qr.size; row += 1) {
    for (let column = 0; column < qr.size; column += 1) {
      if (qr.modules[row * qr.size + column] === '1') path += `M${column + quiet} ${row + quiet}h1v1h-1z`;
    }
  }
  const dark = document.createElementNS(ns, 'path');
  dark.setAttribute('d', path);
  dark.setAttribute('fill', '#000');
  svg.append(dark);
  return svg;
}

/** The account's signed-in sessions: where and when, ending one or all the others. */
function sessionsSection(context: PageContext): HTMLElement {
  const status = statusLine();
  const list = h('div');
  const refresh = () => loadInto(list,
    () => apiGet<{ sessions: ConsoleSession[] }>('/api/account/sessions', { signal: context.signal }),
    (data) => dataTable({
      caption: 'Signed-in sessions',
      rows: data.sessions,
      emptyText: 'No sessions.',
      testId: 'session-table',
      columns: [
        { label: 'Browser', cell: (session) => `${session.user_agent ?? 'Unknown'}${session.current ? ' (this one)' : ''}` },
        { label: 'Signed in', cell: (session) => timeEl(session.created_at) },
        { label: 'Last seen', cell: (session) => (session.last_used_at ? timeEl(session.last_used_at) : '—') },
        {
          label: 'Actions',
          cell: (session) => (session.current ? null : h('button', {
            type: 'button', class: 'button button-small button-danger', 'aria-label': `End session ${session.id}`,
            onclick: () => void end(`/api/account/sessions/${encodeURIComponent(session.id)}`, 'Session ended.'),
          }, 'End')),
        },
      ],
    }));

  async function end(path: string, done: string): Promise<void> {
    try {
      await apiDelete<unknown>(path);
      status.show(done, 'success');
    } catch (error) {
      status.show(`Could not end it: ${errorMessage(error)}`, 'error');
    }
    void refresh();
  }

  void refresh();
  return section('Sessions',
    h('p', { class: 'muted' }, 'Where this account is signed in. Ending a session signs it out at its next request.'),
    buttonRow(h('button', { type: 'button', class: 'button', onclick: () => void end('/api/account/sessions', 'Every other session and token ended.') }, 'End all other sessions and tokens')),
    status.element, list);
}
