/** A value made by its first use and kept: for what only some deployments need, so the rest never pay for it. */
export function onFirstUse<T>(make: () => T): () => T {
  let made: { readonly value: T } | null = null;
  return () => (made ??= { value: make() }).value;
}
