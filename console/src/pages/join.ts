// /console/join#tgi_… — accepting an invitation to an organisation. The secret travels in the
// fragment (never sent to the server in a URL); signed out, it is kept in this tab while the person
// signs in or signs up, and the page comes back to accept it.
import { actFor } from '../acting.js';
import { apiGet, apiPost } from '../api.js';
import { h, replace } from '../dom.js';
import { createForm } from '../forms.js';
import type { Page, PageContext } from '../page.js';
import { navigate } from '../router.js';
import { currentAccount } from '../session.js';
import { announce } from '../status.js';
import { pageHeading } from '../ui.js';
import type { Member, Organisation } from '../types.js';

export const JOIN_PATH = '/console/join';
const STORAGE_KEY = 'tollgate.invitation';

function storedSecret(): string | null {
  try {
    return sessionStorage.getItem(STORAGE_KEY);
  } catch {
    return null;
  }
}

function storeSecret(secret: string | null): void {
  try {
    if (secret === null) sessionStorage.removeItem(STORAGE_KEY);
    else sessionStorage.setItem(STORAGE_KEY, secret);
  } catch {
    // Storage refused: the link must be opened again after signing in.
  }
}

/** Whether an invitation waits in this tab for the person to finish signing in. */
export function invitationWaiting(): boolean {
  return storedSecret() !== null;
}

async function listOrganisations(): Promise<Organisation[]> {
  return (await apiGet<{ organisations: Organisation[] }>('/api/orgs')).organisations;
}

export const joinPage: Page = {
  title: 'Join an organisation',
  public: true,
  render(context: PageContext) {
    const fromLink = window.location.hash.slice(1);
    if (fromLink !== '') storeSecret(decodeURIComponent(fromLink));
    const secret = storedSecret();
    const body = h('div');
    context.root.append(pageHeading('Join an organisation'), body);
    if (secret === null) {
      replace(body, h('p', null, 'This link holds no invitation. Open the link you were sent once more.'));
      return;
    }
    if (currentAccount() === null) {
      replace(body,
        h('p', null, 'You were invited to an organisation. Log in, or create an account with the name or e-mail you were invited by; you come back here to accept.'),
        h('p', { class: 'button-row' },
          h('a', { class: 'button button-primary', href: '/console' }, 'Log in'),
          h('a', { class: 'button', href: '/console/signup' }, 'Create an account')));
      return;
    }
    replace(body, createForm({
      label: 'Accept the invitation',
      submitLabel: 'Accept the invitation',
      fields: [h('p', null, `You are signed in as ${currentAccount()?.name ?? ''}. Accepting makes you a member of the organisation that invited you.`)],
      async onSubmit() {
        const before = new Set((await listOrganisations()).map((organisation) => organisation.id));
        await apiPost<{ member: Member }>('/api/invitations/accept', { secret });
        storeSecret(null);
        // The organisation just joined is the one not in the list before: the console acts for it.
        const joined = (await listOrganisations()).find((organisation) => !before.has(organisation.id));
        if (joined !== undefined) actFor(joined.id);
        announce(`You joined ${joined?.name ?? 'the organisation'}.`);
        navigate('/console/members');
      },
    }));
  },
};
