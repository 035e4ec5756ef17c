/**
 * Functions grouped in a Responses `namespace` tool are called as `{name, namespace}`. Translated,
 * such a function is one flat tool whose client-side name joins both parts with a separator no
 * function name can hold, so the usual tool-name mapping carries it and the reply can split it back.
 */

/** Not in `[a-zA-Z0-9_-]`, the only characters an OpenAI function name may use. */
const SEPARATOR = '.';

/** The flat client-side name of `name` inside `namespace`. */
export function joinNamespace(namespace: string, name: string): string {
  return `${namespace}${SEPARATOR}${name}`;
}

/** A flat name split back into its function name and namespace (absent for a top-level function). */
export function splitNamespace(flat: string): { readonly name: string; readonly namespace?: string } {
  const at = flat.indexOf(SEPARATOR);
  if (at <= 0 || at === flat.length - 1) return { name: flat };
  return { namespace: flat.slice(0, at), name: flat.slice(at + 1) };
}
