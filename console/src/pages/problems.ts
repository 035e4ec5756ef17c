// Pages for addresses that show nothing: unknown paths and admin-only pages.
import { h } from '../dom.js';
import type { PageContext } from '../page.js';
import { pageHeading } from '../ui.js';

export function renderNotFound(context: PageContext): void {
  context.root.append(
    pageHeading('Page not found', 'There is no console page at this address.'),
    h('p', null, h('a', { href: '/console' }, 'Go to the console home')));
}

export function renderForbidden(context: PageContext): void {
  context.root.append(
    pageHeading('Administrators only', 'This page is for accounts with the admin role.'),
    h('p', null, h('a', { href: '/console' }, 'Go to the console home')));
}
