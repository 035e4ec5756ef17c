// Copies the console's static files next to its compiled scripts:
//   console/index.html  -> dist/console/index.html
//   console/console.css -> dist/console/assets/console.css
// The scripts themselves are compiled by `tsc -p tsconfig.console.json`.
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

const copies = [
  ['console/index.html', 'dist/console/index.html'],
  ['console/console.css', 'dist/console/assets/console.css'],
];

for (const [from, to] of copies) {
  const target = join(root, to);
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(join(root, from), target);
}
