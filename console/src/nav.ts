// The header: main navigation and the signed-in account with its balance (fetched again on each
// page, so it is never older than the page) and its Log out button.
// Admin links sit in a collapsed "Admin" menu so the main bar stays short on phones.
import { accountSwitcher, actingOrganisationLoaded, organisationsLoaded } from './acting.js';
import { apiGet } from './api.js';
import { h, replace, uniqueId } from './dom.js';
import { formatMoney } from './money.js';
import type { Account, AccountSummary } from './types.js';

interface NavLink {
  href: string;
  text: string;
}

const MAIN_LINKS: readonly NavLink[] = [
  { href: '/console', text: 'Dashboard' },
  { href: '/console/token', text: 'Tokens' },
  { href: '/console/topup', text: 'Top Up' },
  { href: '/console/payments', text: 'Payments' },
  { href: '/console/statements', text: 'Statements' },
  { href: '/console/usage', text: 'Usage' },
  { href: '/console/analytics', text: 'Analytics' },
  { href: '/console/sessions', text: 'Sessions' },
  { href: '/console/playground', text: 'Playground' },
  { href: '/console/prices', text: 'Prices' },
  { href: '/console/members', text: 'Members' },
  { href: '/console/account', text: 'Account' },
];

const ADMIN_LINKS: readonly NavLink[] = [
  { href: '/console/admin/accounts', text: 'Accounts' },
  { href: '/console/admin/orgs', text: 'Organisations' },
  { href: '/console/admin/codes', text: 'Codes' },
  { href: '/console/admin/payments', text: 'Payments' },
  { href: '/console/admin/providers', text: 'Providers' },
  { href: '/console/admin/audit', text: 'Audit log' },
  { href: '/console/admin/gateway', text: 'Gateway totals' },
];

const PRICES_LINK: NavLink = { href: '/console/prices', text: 'Prices' };
const LOGIN_LINK: NavLink = { href: '/console', text: 'Log in' };

export interface ShellState {
  account: Account | null;
  path: string;
  /** True while the log-in form is the page, so the bar does not offer it twice. */
  onLoginPage: boolean;
  onLogout(): void;
}

export function renderShell(state: ShellState): void {
  const nav = document.getElementById('site-nav');
  const accountArea = document.getElementById('account-area');
  if (nav) {
    replace(nav, navList(state));
    menuButton(nav);
  }
  if (accountArea) replace(accountArea, state.account ? accountBox(state.account, state.onLogout) : null);
}

function navList(state: ShellState): HTMLElement {
  if (!state.account) {
    const links = state.onLoginPage ? [PRICES_LINK] : [PRICES_LINK, LOGIN_LINK];
    return h('ul', { class: 'nav-list' }, links.map((link) => navItem(link, state.path)));
  }
  return h('ul', { class: 'nav-list' },
    MAIN_LINKS.map((link) => navItem(link, state.path)),
    state.account.role === 'admin' ? adminMenu(state.path) : null);
}

/**
 * On a phone the links fold behind a Menu button (CSS shows it under 48rem); the nav starts
 * closed at every page, so a link followed leaves the page in view.
 */
function menuButton(nav: HTMLElement): void {
  const header = nav.parentElement;
  header?.querySelector('.nav-toggle')?.remove();
  nav.dataset.open = 'false';
  if (!nav.id) return;
  const button = h('button', {
    type: 'button',
    class: 'button button-small nav-toggle',
    'aria-expanded': 'false',
    'aria-controls': nav.id,
    'data-testid': 'nav-toggle',
  }, 'Menu');
  button.addEventListener('click', () => {
    const open = nav.dataset.open !== 'true';
    nav.dataset.open = String(open);
    button.setAttribute('aria-expanded', String(open));
  });
  header?.insertBefore(button, nav);
}

function navItem(link: NavLink, path: string): HTMLElement {
  const current = link.href === path;
  return h('li', null, h('a', { href: link.href, class: 'nav-link', 'aria-current': current ? 'page' : null }, link.text));
}

/** A disclosure button: Escape or a click elsewhere closes it. */
function adminMenu(path: string): HTMLElement {
  const listId = uniqueId('admin-menu');
  const list = h('ul', { id: listId, class: 'admin-menu', hidden: true }, ADMIN_LINKS.map((link) => navItem(link, path)));
  const inAdmin = ADMIN_LINKS.some((link) => link.href === path);
  const button = h('button', {
    type: 'button',
    class: `nav-link nav-menu-button${inAdmin ? ' is-current' : ''}`,
    'aria-expanded': 'false',
    'aria-controls': listId,
  }, 'Admin');
  const setOpen = (open: boolean) => {
    list.hidden = !open;
    button.setAttribute('aria-expanded', String(open));
  };
  button.addEventListener('click', () => setOpen(list.hidden));
  const item = h('li', { class: 'nav-menu' }, button, list);
  item.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && !list.hidden) {
      setOpen(false);
      button.focus();
    }
  });
  item.addEventListener('focusout', (event) => {
    if (!(event.relatedTarget instanceof Node) || !item.contains(event.relatedTarget)) setOpen(false);
  });
  return item;
}

/**
 * The balance of the account acted for, as a link to Top Up (an organisation's to its Members
 * page); empty until it loads, and left empty if it cannot.
 */
function headerBalance(): HTMLElement {
  const link = h('a', { href: '/console/topup', class: 'header-balance', 'data-testid': 'header-balance', hidden: true });
  void actingOrganisationLoaded().then(async (organisation) => {
    const balance = organisation === null ? (await apiGet<AccountSummary>('/api/account')).balance : organisation.balance;
    if (balance === null) return;
    if (organisation !== null) link.href = '/console/members';
    link.title = `${organisation === null ? 'Balance' : `${organisation.name}'s balance`} ${balance}`;
    replace(link, h('span', { class: 'visually-hidden' }, organisation === null ? 'Balance: ' : `${organisation.name}'s balance: `), formatMoney(balance));
    link.hidden = false;
  }).catch(() => undefined);
  return link;
}

/** The account switcher, once the person's organisations are read; nothing for someone in none. */
function switcherSlot(account: Account): HTMLElement {
  const slot = h('span', { class: 'switcher-slot' });
  void organisationsLoaded().then((organisations) => {
    if (organisations.length > 0) replace(slot, accountSwitcher(account.name));
  });
  return slot;
}

function accountBox(account: Account, onLogout: () => void): HTMLElement {
  return h('div', { class: 'account-box' },
    switcherSlot(account),
    headerBalance(),
    h('span', { class: 'account-name' },
      h('span', { class: 'visually-hidden' }, 'Signed in as '), account.name,
      account.role === 'admin' ? h('span', { class: 'badge badge-neutral' }, 'admin') : null),
    h('button', { type: 'button', class: 'button button-small', onclick: onLogout }, 'Log out'));
}
