import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PACKAGE_ROOT } from '../../src/paths';
import { importCycles, importGraph, loopThrough, type ImportGraph } from './import-graph';

/**
 * What src/kernel/ may import besides itself, and why. Everything else (admin/, metrics/, plugins/,
 * console/, telemetry/, app.ts …) builds on the kernel, so an import of it would make a cycle or
 * tie the kernel to a plugin; such code gets what it needs from the kernel, or is passed in.
 */
const KERNEL_MAY_IMPORT: readonly { readonly prefix: string; readonly why: string }[] = [
  { prefix: 'src/config/', why: 'the config types; the model lookup by name or alias (request stage)' },
  { prefix: 'src/paths.ts', why: 'where the request schemas are (request validation)' },
  { prefix: 'src/protocols/request-reach.ts', why: "the request's reach, read once by the request stage for rate limiting and billing" },
  { prefix: 'src/protocols/types.ts', why: 'endpoints, error shapes and usage: types only' },
  { prefix: 'src/routing/resolve.ts', why: "a route's target (state type); whether a provider can serve the endpoint (request stage)" },
];

function describeCycle(graph: ImportGraph, component: readonly string[]): string {
  return `${component.length} files: ${component.join(', ')}\n    loop: ${loopThrough(graph, component).join(' -> ')}`;
}

function writeFiles(root: string, files: Record<string, string>): void {
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), text);
  }
}

describe('import structure', () => {
  const graph = importGraph(PACKAGE_ROOT, ['src', 'plugins']);

  it('reads the repository: the composition root imports the kernel, the plugins list imports each plugin', () => {
    expect(graph.get('src/app.ts')).to.include('src/kernel/errors.ts');
    expect(graph.get('plugins/index.ts')).to.include.members(['plugins/auth/index.ts', 'plugins/upstream/index.ts']);
  });

  it('has no import cycle between the files of src/ and plugins/, type-only imports included', () => {
    const cycles = importCycles(graph).map((component) => describeCycle(graph, component));
    expect(cycles, `import cycles:\n  ${cycles.join('\n  ')}`).to.deep.equal([]);
  });

  it('keeps the kernel a leaf: src/kernel/ imports only itself and its allow-list', () => {
    const outside: string[] = [];
    for (const [file, targets] of graph) {
      if (!file.startsWith('src/kernel/')) continue;
      for (const target of targets) {
        if (target.startsWith('src/kernel/')) continue;
        if (!KERNEL_MAY_IMPORT.some((allowed) => target.startsWith(allowed.prefix))) outside.push(`${file} -> ${target}`);
      }
    }
    expect(outside, `kernel imports outside its allow-list:\n  ${outside.join('\n  ')}`).to.deep.equal([]);
  });

  it('the allow-list names neither admin/, metrics/, plugins/ nor the console', () => {
    for (const { prefix } of KERNEL_MAY_IMPORT) expect(prefix).to.not.match(/^(src\/admin\/|src\/metrics\/|plugins\/|console\/|src\/app\.ts)/);
  });

  describe('the cycle finder', () => {
    it('finds each strongly connected component, a self-import included, and nothing else', () => {
      const made: ImportGraph = new Map([
        ['a.ts', ['b.ts']],
        ['b.ts', ['c.ts']],
        ['c.ts', ['a.ts', 'd.ts']],
        ['d.ts', ['e.ts']],
        ['e.ts', []],
        ['f.ts', ['f.ts']],
        ['g.ts', ['a.ts']],
      ]);
      expect(importCycles(made).sort()).to.deep.equal([['a.ts', 'b.ts', 'c.ts'], ['f.ts']]);
      expect(loopThrough(made, ['a.ts', 'b.ts', 'c.ts'])).to.deep.equal(['a.ts', 'b.ts', 'c.ts', 'a.ts']);
    });

    it('counts `import type`, `export … from` and `import()` types, and not imports in comments', () => {
      const root = mkdtempSync(path.join(os.tmpdir(), 'tollgate-import-graph-'));
      try {
        // references: made-up paths, written to a temporary folder (test/docs/references.test.ts).
        writeFiles(root, {
          'src/kernel/state.ts': "import type { Trace } from '../telemetry/trace';\nexport interface State { trace: Trace }\n",
          'src/telemetry/trace.ts': "export type { State } from '../kernel/state';\n// import '../admin/x';\nexport interface Trace { at: number }\n",
          'src/telemetry/index.ts': "export * from './trace';\n",
          'src/admin/x.ts': "export type Of = import('../telemetry').Trace;\n",
        });
        const made = importGraph(root, ['src']);
        expect(made.get('src/telemetry/trace.ts')).to.deep.equal(['src/kernel/state.ts']);
        expect(made.get('src/telemetry/index.ts')).to.deep.equal(['src/telemetry/trace.ts']);
        expect(made.get('src/admin/x.ts')).to.deep.equal(['src/telemetry/index.ts']);
        expect(importCycles(made)).to.deep.equal([['src/kernel/state.ts', 'src/telemetry/trace.ts']]);
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    });
  });
});
