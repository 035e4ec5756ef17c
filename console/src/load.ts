// Loading data into a part of a page: a "Loading…" placeholder, then either the
// rendered result or an error with a way to try again. Resolves to whether it loaded.
import { errorMessage, isAbort } from './api.js';
import { h, replace, type Child } from './dom.js';

export async function loadInto<T>(
  container: HTMLElement,
  load: () => Promise<T>,
  render: (data: T) => Child,
): Promise<boolean> {
  container.setAttribute('aria-busy', 'true');
  replace(container, h('p', { class: 'loading' }, 'Loading…'));
  try {
    const data = await load();
    replace(container, render(data));
    return true;
  } catch (error) {
    if (isAbort(error)) return false;
    replace(container,
      h('div', { class: 'notice notice-error', role: 'alert' },
        h('p', null, errorMessage(error)),
        h('button', { type: 'button', class: 'button', onclick: () => void loadInto(container, load, render) }, 'Try again')));
    return false;
  } finally {
    container.removeAttribute('aria-busy');
  }
}
