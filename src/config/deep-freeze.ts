/** Recursive Object.freeze, so no plugin can change the config it was handed. */

/** Freezes `value` and everything reachable from it; returns the same object. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
