// Signed-out view: log in, or sign up at /console/signup when the operator allows it.
// Shown in place of any console page (except Prices) until a session exists.
import { ApiError, apiGet, apiPost } from '../api.js';
import { h } from '../dom.js';
import { FieldError, createForm, inputField, valueOf } from '../forms.js';
import { loadInto } from '../load.js';
import type { PageContext } from '../page.js';
import { navigate } from '../router.js';
import { startSession } from '../session.js';
import type { Meta, SessionResponse } from '../types.js';
import { pageHeading } from '../ui.js';

export const SIGNUP_PATH = '/console/signup';
const MIN_PASSWORD_LENGTH = 10;

export interface LoginOptions {
  /** Called once the session exists; the caller decides where to go. */
  onSignedIn(): void;
  /** A message to explain why the form is shown, e.g. an expired session. */
  notice?: string;
}

/** Whether the signed-out page should offer sign-up; the title depends on it. */
export function wantsSignup(context: PageContext): boolean {
  return context.path === SIGNUP_PATH;
}

export function renderLogin(context: PageContext, options: LoginOptions): void {
  const body = h('div', { class: 'auth' });
  context.root.append(body);
  void loadInto(body, () => apiGet<Meta>('/api/meta', { signal: context.signal }), (meta) =>
    wantsSignup(context) && meta.signup ? signupView(options) : loginView(meta.signup, options));
}

function loginView(signupEnabled: boolean, options: LoginOptions): HTMLElement {
  const codeField = inputField({
    name: 'code',
    label: 'Two-factor code',
    hint: 'The 6-digit code from your authenticator app, or one of your recovery codes.',
    attrs: { autocomplete: 'one-time-code', spellcheck: 'false', maxlength: 64 },
  });
  codeField.hidden = true;
  const form = createForm({
    label: 'Log in',
    submitLabel: 'Log in',
    fields: [
      inputField({ name: 'login', label: 'Name or e-mail', required: true, attrs: { autocomplete: 'username', autocapitalize: 'none', spellcheck: 'false' } }),
      inputField({ name: 'password', label: 'Password', type: 'password', required: true, attrs: { autocomplete: 'current-password' } }),
      codeField,
    ],
    async onSubmit(form) {
      const code = valueOf(form, 'code');
      const body = { login: valueOf(form, 'login'), password: passwordOf(form, 'password'), ...(code ? { code } : {}) };
      let session: SessionResponse;
      try {
        session = await apiPost<SessionResponse>('/api/session', body);
      } catch (error) {
        // The password was right and the account signs in with a second factor: ask for the code.
        if (error instanceof ApiError && error.code === 'two_factor_required') {
          codeField.hidden = false;
          throw new FieldError('code', error.message);
        }
        // The API names no field for a wrong name or password; show it at the password, marked invalid.
        if (error instanceof ApiError && error.code === 'invalid_credentials') throw new FieldError(error.field === 'code' ? 'code' : 'password', error.message);
        throw error;
      }
      startSession(session);
      // An account the operator requires to have a second factor enrols before anything else.
      if (session.enrol_2fa === true) navigate('/console/account', { replace: true });
      else options.onSignedIn();
    },
  });
  return h('div', { class: 'auth-card' },
    pageHeading('Log in'),
    options.notice ? h('p', { class: 'notice notice-info', role: 'status' }, options.notice) : null,
    form,
    signupEnabled ? h('p', { class: 'auth-switch' }, 'New here? ', h('a', { href: SIGNUP_PATH }, 'Create an account')) : null);
}

function signupView(options: LoginOptions): HTMLElement {
  const form = createForm({
    label: 'Sign up',
    submitLabel: 'Create account',
    fields: [
      inputField({
        name: 'name', label: 'Name', required: true,
        hint: '3–40 characters: letters, digits, dot, dash and underscore.',
        attrs: { autocomplete: 'username', autocapitalize: 'none', spellcheck: 'false', minlength: 3, maxlength: 40, pattern: '[A-Za-z0-9_.\\-]+' },
      }),
      inputField({ name: 'email', label: 'E-mail (optional)', type: 'email', attrs: { autocomplete: 'email' } }),
      inputField({
        name: 'password', label: 'Password', type: 'password', required: true,
        hint: `At least ${MIN_PASSWORD_LENGTH} characters.`,
        attrs: { autocomplete: 'new-password', minlength: MIN_PASSWORD_LENGTH },
      }),
    ],
    async onSubmit(form) {
      const email = valueOf(form, 'email');
      const body = { name: valueOf(form, 'name'), password: passwordOf(form, 'password'), ...(email ? { email } : {}) };
      startSession(await apiPost<SessionResponse>('/api/signup', body));
      options.onSignedIn();
    },
  });
  return h('div', { class: 'auth-card' },
    pageHeading('Create an account'),
    form,
    h('p', { class: 'auth-switch' }, 'Already registered? ', h('a', { href: '/console' }, 'Back to sign-in')));
}

/** Passwords are sent exactly as typed: no trimming. */
function passwordOf(form: HTMLFormElement, name: string): string {
  const input = form.elements.namedItem(name);
  if (!(input instanceof HTMLInputElement)) throw new FieldError(name, 'Enter a password.');
  return input.value;
}
