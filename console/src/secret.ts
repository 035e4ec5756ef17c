// A secret shown exactly once (a new API key or management token), with a Copy
// button and a plain warning that it cannot be shown again.
import { copyFromInput } from './clipboard.js';
import { h, uniqueId } from './dom.js';
import { statusLine } from './status.js';

export interface SecretOptions {
  label: string;
  secret: string;
  testId: string;
}

export function secretReveal(options: SecretOptions): HTMLElement {
  const inputId = uniqueId('secret');
  const noteId = `${inputId}-note`;
  const status = statusLine();
  const input = h('input', {
    id: inputId,
    type: 'text',
    class: 'secret-input',
    readonly: true,
    value: options.secret,
    spellcheck: 'false',
    autocomplete: 'off',
    'aria-describedby': noteId,
    'data-testid': options.testId,
    onfocus: () => input.select(),
  });
  const copy = h('button', {
    type: 'button',
    class: 'button button-primary',
    onclick: async () => {
      const copied = await copyFromInput(input);
      if (copied) status.show('Copied to the clipboard.', 'success');
      else status.show('Could not copy automatically: the text is selected, press Ctrl+C (or ⌘C).', 'error');
    },
  }, 'Copy');
  return h('div', { class: 'secret-reveal' },
    h('label', { for: inputId }, options.label),
    h('div', { class: 'secret-row' }, input, copy),
    h('p', { id: noteId, class: 'notice notice-warn' },
      h('strong', null, 'This secret will not be shown again.'),
      ' Copy it now and keep it somewhere safe; if it is lost, create a new one.'),
    status.element);
}
