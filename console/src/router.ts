// History API routing for everything under /console. Same-origin links to console
// paths are handled here instead of reloading the page; back/forward re-render.

export interface Location {
  /** Normalised path, e.g. "/console/token" (no trailing slash). */
  path: string;
  query: URLSearchParams;
}

export interface NavigateOptions {
  replace?: boolean;
}

type RouteListener = (location: Location, cause: 'start' | 'navigate' | 'history') => void;

const BASE = '/console';
let listener: RouteListener | null = null;

export function startRouter(onRoute: RouteListener): void {
  listener = onRoute;
  document.addEventListener('click', interceptLinkClick);
  window.addEventListener('popstate', () => onRoute(currentLocation(), 'history'));
  onRoute(currentLocation(), 'start');
}

/** Goes to a console URL ("/console/usage?model=x") without reloading. */
export function navigate(to: string, options: NavigateOptions = {}): void {
  const url = new URL(to, window.location.origin);
  const target = url.pathname + url.search;
  if (options.replace) window.history.replaceState(null, '', target);
  else if (target !== window.location.pathname + window.location.search) window.history.pushState(null, '', target);
  listener?.(currentLocation(), 'navigate');
}

/** Renders the current URL again, e.g. after signing in or out. */
export function reload(): void {
  listener?.(currentLocation(), 'navigate');
}

function currentLocation(): Location {
  return { path: normalisePath(window.location.pathname), query: new URLSearchParams(window.location.search) };
}

function normalisePath(pathname: string): string {
  const trimmed = pathname.replace(/\/+$/, '');
  return trimmed === '' ? '/' : trimmed;
}

function isConsolePath(pathname: string): boolean {
  const path = normalisePath(pathname);
  return (path === BASE || path.startsWith(`${BASE}/`)) && !path.startsWith(`${BASE}/assets/`);
}

function interceptLinkClick(event: MouseEvent): void {
  // Leave the browser's own behaviour for new-tab clicks and non-console links.
  if (event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const link = event.target instanceof Element ? event.target.closest('a') : null;
  if (!link || link.hasAttribute('download')) return;
  if (link.target && link.target !== '_self') return;
  const url = new URL(link.href, window.location.href);
  if (url.origin !== window.location.origin || !isConsolePath(url.pathname)) return;
  if (url.hash && url.pathname === window.location.pathname && url.search === window.location.search) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
}

/** Records new query parameters in the URL (for reload and sharing) without rendering again. */
export function replaceQuery(query: URLSearchParams): void {
  const search = query.toString();
  window.history.replaceState(null, '', `${window.location.pathname}${search ? `?${search}` : ''}`);
}
