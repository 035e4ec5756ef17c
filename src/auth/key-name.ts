/**
 * What a key's name may hold. Names are shown raw by `tollgate key list` in an operator's terminal, so
 * a control character (ESC sequences, C1 controls such as CSI, bidi overrides, line breaks) could
 * rewrite what the operator sees: none is accepted, whether the name comes from the console or the CLI.
 */

/** C0 and DEL, C1, line and paragraph separators, and the bidi embedding, override and isolate controls. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
const CONTROLS = new RegExp(CONTROL.source, 'g');

const MAX_KEY_NAME_LENGTH = 100;

/** Whether `name` is a key name: 1 to 100 characters, none of them a control character. */
export function isValidKeyName(name: string): boolean {
  return name.length >= 1 && name.length <= MAX_KEY_NAME_LENGTH && !CONTROL.test(name);
}

/** A name stored before the rule, made safe to print: each control character becomes '?'. */
export function printableKeyName(name: string): string {
  return name.replace(CONTROLS, '?');
}
