/**
 * Reading parsed JSON without trusting its types. Client requests, upstream replies and config data
 * are `unknown` until one of these has looked at them; readers then pick fields out and check each.
 */

/** A JSON object, as parsed from a client or an upstream, or built for one. */
export type Json = Record<string, unknown>;

/** Whether `value` is a JSON object: not null, not an array. */
export function isObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** `value` if it is a JSON object, else an empty one, so optional nested fields read as absent. */
export function object(value: unknown): Json {
  return isObject(value) ? value : {};
}

/** Parses JSON, or returns null for anything unparseable. */
export function tryParse(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/** `value` if it is a string, else ''. */
export function stringField(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** A string that says something: null for absent, non-string or empty values. */
export function nonEmptyStringOrNull(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}
