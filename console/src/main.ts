// Boot: restore the session, then render whichever page the URL names — or the
// log-in form, for every page but Prices, while nobody is signed in.
import { refreshOrganisations } from './acting.js';
import { apiDelete, apiGet, errorMessage, setUnauthenticatedHandler } from './api.js';
import { h, replace } from './dom.js';
import { setCurrency } from './money.js';
import { renderShell } from './nav.js';
import type { PageContext } from './page.js';
import { invitationWaiting, JOIN_PATH } from './pages/join.js';
import { SIGNUP_PATH, renderLogin, wantsSignup } from './pages/login.js';
import { renderForbidden, renderNotFound } from './pages/problems.js';
import { findPage } from './routes.js';
import { navigate, reload, startRouter, type Location } from './router.js';
import { currentAccount, endSession, isAdmin, restoreSession } from './session.js';
import { alertBox, announce } from './status.js';

let activeVisit: AbortController | null = null;
/** Explains why the log-in form is back (an expired session); shown once. */
let loginNotice: string | undefined;

async function boot(): Promise<void> {
  setUnauthenticatedHandler(onSessionExpired);
  try {
    await Promise.all([restoreSession(), loadCurrency()]);
  } catch (error) {
    showBootFailure(error);
    return;
  }
  startRouter(renderLocation);
}

/** Amounts are shown in the gateway's currency; without an answer they stay in the default (USD). */
async function loadCurrency(): Promise<void> {
  try {
    setCurrency((await apiGet<{ currency: string }>('/api/meta')).currency);
  } catch {
    // The session check reports an unreachable server; a missing currency is no reason to stop.
  }
}

function renderLocation(location: Location, cause: 'start' | 'navigate' | 'history'): void {
  const account = currentAccount();
  if (account && location.path === SIGNUP_PATH) {
    navigate('/console', { replace: true });
    return;
  }
  // Responses still on their way for the previous page are no longer wanted.
  activeVisit?.abort();
  activeVisit = new AbortController();
  const context: PageContext = {
    root: h('div', { class: 'page-body' }),
    path: location.path,
    query: location.query,
    signal: activeVisit.signal,
  };

  if (account) refreshOrganisations();
  const page = findPage(location.path);
  const showLogin = !account && !page?.public;
  const title = renderPageInto(context, showLogin);
  document.title = `${title} · Tollgate`;
  renderShell({ account, path: location.path, onLoginPage: showLogin, onLogout: logOut });
  const main = document.getElementById('main');
  if (main) replace(main, context.root);
  if (cause !== 'start') moveFocusTo(context.root, title);
}

/** Renders the right view for the context and returns its title. */
function renderPageInto(context: PageContext, showLogin: boolean): string {
  if (showLogin) {
    const notice = loginNotice;
    loginNotice = undefined;
    renderLogin(context, { onSignedIn, ...(notice ? { notice } : {}) });
    return wantsSignup(context) ? 'Create an account' : 'Log in';
  }
  const page = findPage(context.path);
  if (!page) {
    renderNotFound(context);
    return 'Page not found';
  }
  if (page.admin && !isAdmin()) {
    renderForbidden(context);
    return 'Administrators only';
  }
  page.render(context);
  return page.title;
}

/** After in-app navigation, focus goes to the new page's heading (as a page load would reset it). */
function moveFocusTo(root: HTMLElement, title: string): void {
  window.scrollTo(0, 0);
  const heading = root.querySelector<HTMLElement>('h1');
  if (heading) heading.focus();
  else document.getElementById('main')?.focus();
  announce(title);
}

function onSignedIn(): void {
  // Someone who opened an invitation signed out comes back to it once signed in or up.
  if (invitationWaiting()) navigate(JOIN_PATH, { replace: true });
  else if (window.location.pathname.startsWith(SIGNUP_PATH)) navigate('/console', { replace: true });
  else reload();
}

function onSessionExpired(): void {
  if (!currentAccount()) return;
  endSession();
  loginNotice = 'Your session has ended. Please log in again.';
  reload();
}

async function logOut(): Promise<void> {
  try {
    await apiDelete<void>('/api/session');
  } catch (error) {
    // A 401 means the session is already gone, which the unauthenticated handler has dealt with.
    if (currentAccount()) announce(`Could not log out: ${errorMessage(error)}`);
    return;
  }
  endSession();
  navigate('/console');
  announce('Logged out.');
}

function showBootFailure(error: unknown): void {
  const main = document.getElementById('main');
  if (!main) return;
  document.title = 'Unavailable · Tollgate';
  replace(main,
    h('h1', null, 'The console could not start'),
    alertBox(errorMessage(error)),
    h('button', { type: 'button', class: 'button', onclick: () => window.location.reload() }, 'Try again'));
}

void boot();
