/**
 * Preloaded into a gateway under test (`node --require`): when the process exits, writes the names of
 * the packages it loaded from node_modules, as a JSON array, to the file TOLLGATE_TEST_LOADED_PACKAGES
 * names. Tells which optional dependencies a configuration really loads.
 */
import { writeFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

/** The package a module file belongs to: its innermost node_modules folder's entry (`@scope/name` or `name`). */
function packageOf(file: string): string | null {
  const matches = [...file.matchAll(/[\\/]node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/g)];
  const last = matches.at(-1)?.[1];
  return last === undefined ? null : last.replace('\\', '/');
}

const file = process.env.TOLLGATE_TEST_LOADED_PACKAGES;
// `--require` preloads into every worker thread as well (the tokenizer's, SQLite's checkpoints'):
// a worker exiting at shutdown would write its own list over the main thread's.
if (file !== undefined && file !== '' && isMainThread) {
  process.on('exit', () => {
    const names = new Set(Object.keys(require.cache).map(packageOf).filter((name) => name !== null));
    writeFileSync(file, JSON.stringify([...names].sort()));
  });
}
