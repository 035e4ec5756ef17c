// A confirm step for destructive actions, as a modal <dialog>: the browser keeps
// focus inside it and closes it on Escape (which counts as "no").
import { h, uniqueId } from './dom.js';

export interface ConfirmOptions {
  title: string;
  message: string;
  confirmLabel: string;
}

export function confirmAction(options: ConfirmOptions): Promise<boolean> {
  const titleId = uniqueId('confirm-title');
  const messageId = uniqueId('confirm-message');
  const returnFocusTo = document.activeElement instanceof HTMLElement ? document.activeElement : null;

  const dialog = h('dialog', { class: 'dialog', 'aria-labelledby': titleId, 'aria-describedby': messageId });
  const cancel = h('button', { type: 'button', class: 'button', onclick: () => dialog.close('cancel') }, 'Cancel');
  const confirm = h('button', { type: 'button', class: 'button button-danger', onclick: () => dialog.close('confirm') },
    options.confirmLabel);
  dialog.append(
    h('h2', { id: titleId }, options.title),
    h('p', { id: messageId }, options.message),
    h('div', { class: 'button-row' }, confirm, cancel));

  return new Promise((resolve) => {
    dialog.addEventListener('close', () => {
      resolve(dialog.returnValue === 'confirm');
      dialog.remove();
      if (returnFocusTo?.isConnected) returnFocusTo.focus();
    }, { once: true });
    document.body.append(dialog);
    dialog.returnValue = '';
    dialog.showModal();
    // The safe choice has focus, so a stray Enter does not destroy anything.
    cancel.focus();
  });
}
