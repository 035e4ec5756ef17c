// Small display pieces shared by the pages.
import { h, type Child } from './dom.js';
import { formatMoney } from './money.js';
import { formatDate, formatDateTime } from './time.js';

/** The page's one <h1>; focus moves here after navigation (hence tabindex -1). */
export function pageHeading(text: string, ...intro: Child[]): HTMLElement {
  return h('div', { class: 'page-heading' },
    h('h1', { tabindex: -1 }, text),
    intro.length ? h('p', { class: 'lead' }, ...intro) : null);
}

export function section(title: string, ...children: Child[]): HTMLElement {
  return h('section', { class: 'section' }, h('h2', null, title), ...children);
}

export type BadgeTone = 'good' | 'warn' | 'bad' | 'neutral';

export function badge(text: string, tone: BadgeTone): HTMLElement {
  return h('span', { class: `badge badge-${tone}` }, text);
}

export function timeEl(iso: string | null | undefined, dateOnly = false): Child {
  if (!iso) return '—';
  return h('time', { datetime: iso }, dateOnly ? formatDate(iso) : formatDateTime(iso));
}

export function money(value: string | null | undefined): HTMLElement {
  return h('span', { class: 'money' }, formatMoney(value));
}

export function count(value: number): string {
  return new Intl.NumberFormat().format(value);
}

export function buttonRow(...buttons: Child[]): HTMLElement {
  return h('div', { class: 'button-row' }, ...buttons);
}
