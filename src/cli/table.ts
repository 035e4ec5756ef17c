/** Plain-text layout shared by the CLI commands: aligned columns and one way of writing a time. */

/** Formats rows as left-aligned columns separated by two spaces. */
export function formatTable(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column])).join('  ').trimEnd());
}

/** `2025-11-22 06:23Z`: minutes are enough to tell rows apart, and UTC reads the same on every host. */
export function formatTime(date: Date): string {
  return `${date.toISOString().slice(0, 16).replace('T', ' ')}Z`;
}
