// A tiny element builder. It only ever uses createElement, setAttribute and text
// nodes — never innerHTML — so anything the API returns is displayed as text.

export type Child = Node | string | number | null | undefined | false | readonly Child[];

type AttrValue = string | number | boolean | null | undefined;
type Listener = (event: Event) => void;
export type Attrs = Record<string, AttrValue | Listener>;

const SVG_NS = 'http://www.w3.org/2000/svg';

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  applyAttrs(element, attrs);
  append(element, children);
  return element;
}

export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG_NS, tag);
  applyAttrs(element, attrs);
  append(element, children);
  return element;
}

/** Appends children, flattening arrays and skipping empty values. */
function append(parent: Node, children: readonly Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else if (child instanceof Node) parent.appendChild(child);
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a string or a number: Array.isArray does not narrow readonly arrays away
    else parent.appendChild(document.createTextNode(String(child)));
  }
}

/** Replaces everything inside `parent` with `children`. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

function applyAttrs(element: Element, attrs: Attrs | null | undefined): void {
  if (!attrs) return;
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === 'function') {
      // `onclick: fn` → addEventListener('click', fn); no inline handlers (CSP).
      if (!name.startsWith('on')) throw new Error(`h(): function given for attribute "${name}"`);
      element.addEventListener(name.slice(2), value);
      continue;
    }
    // The CSP forbids inline styles; fail loudly instead of silently rendering unstyled.
    if (name === 'style') throw new Error('h(): inline styles are blocked by the CSP; use a class');
    if (value === null || value === undefined || value === false) continue;
    element.setAttribute(name, value === true ? '' : String(value));
  }
}

let idCounter = 0;

/** A document-unique id, for label/aria wiring. */
export function uniqueId(prefix: string): string {
  idCounter += 1;
  return `${prefix}-${idCounter}`;
}
