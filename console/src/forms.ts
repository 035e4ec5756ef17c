// Forms: labelled fields, a submit flow that blocks double submits, and errors
// shown where they belong — beside the field the API names in `error.field`
// (aria-invalid + aria-describedby), or in the form's role="alert" area.
import { ApiError, errorMessage, isAbort } from './api.js';
import { h, uniqueId, type Attrs, type Child } from './dom.js';

/** A problem found in the browser, reported the same way as an API field error. */
export class FieldError extends Error {
  constructor(readonly field: string, message: string) {
    super(message);
    this.name = 'FieldError';
  }
}

interface FieldIds {
  id: string;
  hintId: string | null;
  errorId: string;
}

function fieldIds(name: string, hint: string | undefined): FieldIds {
  const id = uniqueId(`field-${name.replace(/[^A-Za-z0-9_-]/g, '-')}`);
  return { id, hintId: hint ? `${id}-hint` : null, errorId: `${id}-error` };
}

function hintEl(ids: FieldIds, hint: string | undefined): Child {
  return hint && ids.hintId ? h('p', { id: ids.hintId, class: 'hint' }, hint) : null;
}

function errorSlot(ids: FieldIds): HTMLElement {
  return h('p', { id: ids.errorId, class: 'field-error', hidden: true });
}

export interface InputOptions {
  name: string;
  label: string;
  type?: string;
  value?: string | number | null;
  hint?: string;
  required?: boolean;
  /** Extra attributes: autocomplete, inputmode, pattern, min, placeholder… */
  attrs?: Attrs;
}

export function inputField(options: InputOptions): HTMLElement {
  const ids = fieldIds(options.name, options.hint);
  const input = h('input', {
    ...options.attrs,
    id: ids.id,
    name: options.name,
    type: options.type ?? 'text',
    value: options.value ?? null,
    required: options.required ?? false,
    'aria-describedby': ids.hintId,
    'data-error-id': ids.errorId,
  });
  return h('div', { class: 'field' },
    h('label', { for: ids.id }, options.label), hintEl(ids, options.hint), input, errorSlot(ids));
}

export interface SelectOptions {
  name: string;
  label: string;
  options: ReadonlyArray<{ value: string; label: string }>;
  value?: string;
  hint?: string;
}

export function selectField(options: SelectOptions): HTMLElement {
  const ids = fieldIds(options.name, options.hint);
  const select = h('select', {
    id: ids.id,
    name: options.name,
    'aria-describedby': ids.hintId,
    'data-error-id': ids.errorId,
  }, options.options.map((option) =>
    h('option', { value: option.value, selected: option.value === options.value }, option.label)));
  return h('div', { class: 'field' },
    h('label', { for: ids.id }, options.label), hintEl(ids, options.hint), select, errorSlot(ids));
}

export interface GroupOptions {
  /** The API field the group stands for (e.g. "rate_limits"), so its errors land here. */
  name: string;
  legend: string;
  hint?: string;
  className?: string;
}

/** A <fieldset> of related controls; form.elements finds it by name. */
export function fieldGroup(options: GroupOptions, ...children: Child[]): HTMLFieldSetElement {
  const ids = fieldIds(options.name, options.hint);
  return h('fieldset', {
    name: options.name,
    class: `field-group ${options.className ?? ''}`.trim(),
    'aria-describedby': ids.hintId,
    'data-error-id': ids.errorId,
  }, h('legend', null, options.legend), hintEl(ids, options.hint), ...children, errorSlot(ids));
}

export interface CheckboxGroupOptions extends GroupOptions {
  /** Name shared by the checkboxes; distinct from the group's so namedItem finds the group. */
  itemName: string;
  items: readonly string[];
  checked: readonly string[];
}

export function checkboxGroup(options: CheckboxGroupOptions): HTMLFieldSetElement {
  const checked = new Set(options.checked);
  const boxes = options.items.map((item) =>
    h('label', { class: 'check' },
      h('input', { type: 'checkbox', name: options.itemName, value: item, checked: checked.has(item) }),
      h('span', null, item)));
  return fieldGroup({ ...options, className: 'checkbox-group' }, h('div', { class: 'checks' }, boxes));
}

export interface FormSpec {
  fields: Child[];
  submitLabel: string;
  /** Buttons beside submit, e.g. Cancel. */
  secondary?: Child[];
  /** aria-label, for forms that have no heading of their own. */
  label?: string;
  className?: string;
  /** Where an error without a `field` is shown, for one-field forms; otherwise the form alert. */
  fallbackField?: string;
  onSubmit(form: HTMLFormElement): Promise<void>;
}

/**
 * Builds a form whose submit runs `onSubmit` once at a time. The browser's own
 * constraint checks (required, pattern, min…) are shown like API errors, so every
 * message looks and is announced the same way.
 */
export function createForm(spec: FormSpec): HTMLFormElement {
  const formError = h('div', { class: 'form-error', role: 'alert', hidden: true });
  const submit = h('button', { type: 'submit', class: 'button button-primary' }, spec.submitLabel);
  const form = h('form', { class: spec.className ?? 'form', novalidate: true, 'aria-label': spec.label ?? null },
    ...spec.fields,
    formError,
    h('div', { class: 'button-row' }, submit, ...(spec.secondary ?? [])));

  let pending = false;
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (pending) return;
    clearErrors(form);
    if (!showConstraintErrors(form)) return;
    pending = true;
    setBusy(form, submit, true);
    spec.onSubmit(form)
      .catch((error: unknown) => {
        if (!isAbort(error)) showError(form, error, spec.fallbackField);
      })
      .finally(() => {
        pending = false;
        setBusy(form, submit, false);
      });
  });
  // Once a person edits a field, its old error no longer describes it.
  form.addEventListener('input', (event) => {
    const control = event.target instanceof Element ? event.target.closest('[data-error-id]') : null;
    if (control instanceof HTMLElement) clearFieldError(form, control);
  });
  return form;
}

function setBusy(form: HTMLFormElement, submit: HTMLButtonElement, busy: boolean): void {
  // aria-disabled rather than disabled: a disabled button would drop keyboard focus.
  form.setAttribute('aria-busy', String(busy));
  submit.setAttribute('aria-disabled', String(busy));
}

/** Shows `error` beside its field when it names one this form has, else in the form alert. */
function showError(form: HTMLFormElement, error: unknown, fallbackField?: string): void {
  const field = error instanceof ApiError || error instanceof FieldError ? error.field : undefined;
  const control = findControl(form, field) ?? findControl(form, fallbackField);
  const message = errorMessage(error);
  if (control) {
    showFieldError(form, control, message);
    focusControl(control);
    return;
  }
  const formError = form.querySelector<HTMLElement>('.form-error');
  if (formError) {
    formError.textContent = message;
    formError.hidden = false;
  }
}

function clearErrors(form: HTMLFormElement): void {
  for (const control of form.querySelectorAll<HTMLElement>('[data-error-id]')) clearFieldError(form, control);
  const formError = form.querySelector<HTMLElement>('.form-error');
  if (formError) {
    formError.textContent = '';
    formError.hidden = true;
  }
}

/** Reports the first failed native constraint; true when the form is valid. */
function showConstraintErrors(form: HTMLFormElement): boolean {
  for (const element of form.elements) {
    if (!(element instanceof HTMLInputElement || element instanceof HTMLSelectElement || element instanceof HTMLTextAreaElement)) continue;
    if (element.willValidate && !element.checkValidity()) {
      // The browser's text for a pattern mismatch ("Please match the requested format.") names no format; a field may give its own.
      const message = element.validity.patternMismatch && element.dataset.patternMessage ? element.dataset.patternMessage : element.validationMessage;
      showFieldError(form, element, message);
      element.focus();
      return false;
    }
  }
  return true;
}

/** The control (or fieldset) for an API field name; "rate_limits.rpm" falls back to "rate_limits". */
function findControl(form: HTMLFormElement, field: string | undefined): HTMLElement | null {
  if (!field) return null;
  for (const name of [field, field.split(/[.[]/)[0] ?? field]) {
    const item = form.elements.namedItem(name);
    const element = item instanceof RadioNodeList ? item[0] : item;
    if (element instanceof HTMLElement && element.dataset.errorId) return element;
  }
  return null;
}

/** Focuses a control, or the first control inside a fieldset (which cannot take focus itself). */
function focusControl(control: HTMLElement): void {
  const target = control instanceof HTMLFieldSetElement
    ? control.querySelector<HTMLElement>('input, select, textarea, button')
    : control;
  target?.focus();
}

function showFieldError(form: HTMLFormElement, control: HTMLElement, message: string): void {
  const errorId = control.dataset.errorId;
  const slot = errorId ? form.querySelector<HTMLElement>(`#${CSS.escape(errorId)}`) : null;
  if (!errorId || !slot) return;
  slot.textContent = message;
  slot.hidden = false;
  control.setAttribute('aria-invalid', 'true');
  const describedBy = new Set((control.getAttribute('aria-describedby') ?? '').split(' ').filter(Boolean));
  describedBy.add(errorId);
  control.setAttribute('aria-describedby', [...describedBy].join(' '));
}

function clearFieldError(form: HTMLFormElement, control: HTMLElement): void {
  const errorId = control.dataset.errorId;
  if (!errorId || control.getAttribute('aria-invalid') !== 'true') return;
  control.removeAttribute('aria-invalid');
  const describedBy = (control.getAttribute('aria-describedby') ?? '').split(' ').filter((id) => id && id !== errorId);
  if (describedBy.length) control.setAttribute('aria-describedby', describedBy.join(' '));
  else control.removeAttribute('aria-describedby');
  const slot = form.querySelector<HTMLElement>(`#${CSS.escape(errorId)}`);
  if (slot) {
    slot.textContent = '';
    slot.hidden = true;
  }
}

/** The trimmed value of the named control ('' when absent). */
export function valueOf(form: HTMLFormElement, name: string): string {
  const item = form.elements.namedItem(name);
  if (item instanceof HTMLInputElement || item instanceof HTMLSelectElement || item instanceof HTMLTextAreaElement) {
    return item.value.trim();
  }
  return '';
}

/** The values of the checked checkboxes called `name`. */
export function checkedValues(form: HTMLFormElement, name: string): string[] {
  return [...form.querySelectorAll<HTMLInputElement>('input[type="checkbox"]')]
    .filter((box) => box.name === name && box.checked)
    .map((box) => box.value);
}
