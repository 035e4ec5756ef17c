/**
 * The versions a store's migration list must have: 1, 2, 3 … up to its last, each once and in order,
 * but for numbers set aside for work landing beside it (each branch that adds a migration takes the
 * number it was given, so two never collide). A reserved number is expected once its migration is in
 * the list; take it out of RESERVED when it lands.
 */
const RESERVED: ReadonlySet<number> = new Set([]);

export function expectedVersions(migrations: readonly { readonly version: number }[]): number[] {
  const present = new Set(migrations.map((migration) => migration.version));
  const last = migrations.length === 0 ? 0 : migrations[migrations.length - 1].version;
  return Array.from({ length: last }, (_, index) => index + 1).filter((version) => present.has(version) || !RESERVED.has(version));
}
