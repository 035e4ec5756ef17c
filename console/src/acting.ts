// Which account the console acts for: the person's own, or one of their organisations. The choice
// is remembered in this browser; an organisation they no longer belong to falls back to their own.
import { apiGet } from './api.js';
import { h } from './dom.js';
import { reload } from './router.js';
import type { Organisation } from './types.js';

const STORAGE_KEY = 'tollgate.acting';
const PERSONAL = '';

let organisations: Organisation[] = [];
let loaded: Promise<Organisation[]> = Promise.resolve([]);

function savedId(): string {
  try {
    return localStorage.getItem(STORAGE_KEY) ?? PERSONAL;
  } catch {
    return PERSONAL;
  }
}

function saveId(id: string): void {
  try {
    if (id === PERSONAL) localStorage.removeItem(STORAGE_KEY);
    else localStorage.setItem(STORAGE_KEY, id);
  } catch {
    // Storage refused: the choice lasts for this page only.
  }
}

/** Reads the person's organisations again (on each page, so a removal shows at once). */
export function refreshOrganisations(): void {
  loaded = apiGet<{ organisations: Organisation[] }>('/api/orgs').then((answer) => {
    organisations = answer.organisations;
    return organisations;
  }, () => {
    organisations = [];
    return organisations;
  });
}

/** The organisations as this page read them; an unreadable list reads as none (personal only). */
export function organisationsLoaded(): Promise<Organisation[]> {
  return loaded;
}

/** The organisation chosen in the header once the list is read, or null for the personal account. */
export async function actingOrganisationLoaded(): Promise<Organisation | null> {
  await loaded;
  return actingOrganisation();
}

/** The organisation chosen in the header, or null for the personal account. */
function actingOrganisation(): Organisation | null {
  const id = savedId();
  return organisations.find((organisation) => organisation.id === id) ?? null;
}

export function actFor(id: string | null): void {
  saveId(id ?? PERSONAL);
}

/** Owners and admins manage members and read every member's usage. */
export function managesMembers(organisation: Organisation | null): boolean {
  return organisation?.role === 'owner' || organisation?.role === 'admin';
}

/** Owners and billing members move credit into and out of the organisation (org-access.ts: move_money). */
export function movesMoney(organisation: Organisation): boolean {
  return organisation.role === 'owner' || organisation.role === 'billing';
}

/** The header's account switcher: the personal account and each organisation, with one's role. */
export function accountSwitcher(personalName: string): HTMLElement {
  const chosen = actingOrganisation()?.id ?? PERSONAL;
  const select = h('select', {
    id: 'account-switcher',
    class: 'account-switcher',
    'data-testid': 'account-switcher',
    onchange: () => {
      actFor(select.value === PERSONAL ? null : select.value);
      reload();
    },
  },
  h('option', { value: PERSONAL, selected: chosen === PERSONAL }, `${personalName} (personal)`),
  organisations.map((organisation) =>
    h('option', { value: organisation.id, selected: chosen === organisation.id }, `${organisation.name} (${organisation.role ?? 'member'})`)));
  return h('span', { class: 'account-switch' },
    h('label', { for: 'account-switcher', class: 'visually-hidden' }, 'Acting for'), select);
}

/** Where the usage reads of the account acted for are: the person's own, or the organisation's (by member). */
export function usageBase(organisation: Organisation | null): string {
  return organisation === null ? '/api/usage' : `/api/orgs/${encodeURIComponent(organisation.id)}/usage`;
}
