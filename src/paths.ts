/** Locations inside the installed package, valid from both `src/` (ts) and `dist/src/` (compiled). */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

function findPackageRoot(start: string): string {
  let dir = start;
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`package.json not found above ${start}`);
    dir = parent;
  }
  return dir;
}

/** The folder holding package.json, schemas/ and the default gateway.yaml. */
export const PACKAGE_ROOT = findPackageRoot(__dirname);
export const SCHEMAS_DIR = path.join(PACKAGE_ROOT, 'schemas');

/** The version in package.json, as `GET /api/meta` reports it. */
export const PACKAGE_VERSION: string = (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
