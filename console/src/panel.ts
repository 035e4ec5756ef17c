// An inline panel for a task that belongs to the page (add a token, edit limits,
// credit an account). Opening it moves focus inside; Escape or Cancel closes it and
// gives focus back to the button that opened it. One panel per page, so two forms
// with the same labels are never on screen together.
import { h, replace, uniqueId, type Child } from './dom.js';

export interface Panel {
  element: HTMLElement;
  open(title: string, content: Child, opener?: HTMLElement): void;
  close(): void;
}

export function inlinePanel(): Panel {
  const headingId = uniqueId('panel-heading');
  const element = h('section', { class: 'panel', id: uniqueId('panel'), 'aria-labelledby': headingId, hidden: true });
  let opener: HTMLElement | undefined;

  const close = () => {
    if (element.hidden) return;
    element.hidden = true;
    element.replaceChildren();
    opener?.setAttribute('aria-expanded', 'false');
    if (opener?.isConnected) opener.focus();
    opener = undefined;
  };

  element.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') {
      event.preventDefault();
      close();
    }
  });

  const open = (title: string, content: Child, newOpener?: HTMLElement) => {
    opener?.setAttribute('aria-expanded', 'false');
    opener = newOpener;
    opener?.setAttribute('aria-controls', element.id);
    opener?.setAttribute('aria-expanded', 'true');
    replace(element,
      h('div', { class: 'panel-header' },
        h('h2', { id: headingId, tabindex: -1 }, title),
        h('button', { type: 'button', class: 'button button-quiet', 'aria-label': `Close ${title}`, onclick: close }, '×')),
      content);
    element.hidden = false;
    focusFirstField(element, headingId);
  };

  return { element, open, close };
}

/** Focuses the first form field in `container`, or its heading when it has none. */
function focusFirstField(container: HTMLElement, headingId?: string): void {
  const field = container.querySelector<HTMLElement>('input:not([type="hidden"]):not([readonly]), select, textarea');
  const target = field ?? (headingId ? container.querySelector<HTMLElement>(`#${CSS.escape(headingId)}`) : null);
  target?.focus();
}
