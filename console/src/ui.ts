// Small display pieces shared by the pages.
import { h, type Child } from './dom.js';
import { formatExactMoney, formatMoney } from './money.js';
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

/** An amount as money ("$22.69"), the exact figure ("22.685743") on hover. */
export function money(value: string | null | undefined, testId?: string): HTMLElement {
  return h('span', { class: 'money', title: value ?? null, 'data-testid': testId ?? null }, formatMoney(value));
}

/** A total in a sentence, in bold, the exact figure on hover. */
export function totalMoney(value: string, testId: string): HTMLElement {
  return h('strong', { title: value, 'data-testid': testId }, formatMoney(value));
}

/** A price or an exact figure in full ("$0.075"), where rounding to cents would mislead. */
export function exactMoney(value: string | null | undefined): HTMLElement {
  return h('span', { class: 'money', title: value ?? null }, formatExactMoney(value));
}

export function count(value: number): string {
  return new Intl.NumberFormat().format(value);
}

export function buttonRow(...buttons: Child[]): HTMLElement {
  return h('div', { class: 'button-row' }, ...buttons);
}
