// npm runs `prepare` after every install in a checkout, production installs (`npm ci --omit=dev`)
// included, where TypeScript is not installed. Build when the compiler is there; otherwise keep the
// dist/ already built (a packed tarball, the Docker image's build stage), or say how to get one.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

if (existsSync(join(root, 'node_modules', 'typescript', 'bin', 'tsc'))) {
  const npm = process.env.npm_execpath;
  const build = npm ? spawnSync(process.execPath, [npm, 'run', 'build'], { cwd: root, stdio: 'inherit' }) : spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  process.exit(build.status ?? 1);
}
if (existsSync(join(root, 'dist', 'src', 'cli.js'))) {
  console.log('prepare: TypeScript is not installed (a production install); using the dist/ already built');
  process.exit(0);
}
console.error(
  'prepare: TypeScript is not installed and there is no dist/ to run. Install once with dev dependencies ' +
    '(`npm ci`), or install from a packed tarball (`npm pack` builds dist/ into it).',
);
process.exit(1);
