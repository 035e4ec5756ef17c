// Status messages for assistive technology: a page-wide announcer for navigation
// and short-lived news, and visible per-section messages in aria-live regions.
import { h } from './dom.js';

/** Speaks `message` through the page's polite live region (#announcer). */
export function announce(message: string): void {
  const announcer = document.getElementById('announcer');
  if (!announcer) return;
  // Clearing first makes a repeated identical message be announced again.
  announcer.textContent = '';
  window.setTimeout(() => {
    announcer.textContent = message;
  }, 50);
}

type Tone = 'info' | 'success' | 'error';

export interface StatusLine {
  element: HTMLElement;
  show(message: string, tone?: Tone): void;
  clear(): void;
}

/** A visible line whose updates are read out politely (role="status"). */
export function statusLine(): StatusLine {
  const element = h('p', { class: 'status', role: 'status', 'aria-live': 'polite', hidden: true });
  return {
    element,
    show(message, tone = 'info') {
      element.className = `status status-${tone}`;
      element.textContent = message;
      element.hidden = false;
    },
    clear() {
      element.textContent = '';
      element.hidden = true;
    },
  };
}

/** An error shown once, read out immediately (role="alert"). */
export function alertBox(message: string): HTMLElement {
  return h('p', { class: 'notice notice-error', role: 'alert' }, message);
}
