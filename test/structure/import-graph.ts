/**
 * The graph of relative imports between the repository's own .ts files, and its strongly connected
 * components. Read with TypeScript's own pre-processor, so `import type`, `export … from`, `import()`
 * (also in type positions) and `require` all count, and imports inside comments do not.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** File → the files it imports; both as paths relative to the repository root, with `/` separators. */
export type ImportGraph = ReadonlyMap<string, readonly string[]>;

function tsFilesUnder(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) files.push(...tsFilesUnder(full));
    else if (entry.name.endsWith('.ts')) files.push(full);
  }
  return files;
}

/** The .ts file a relative specifier names, as `moduleResolution: nodenext` finds it for CommonJS output. */
function resolveRelative(fromFile: string, specifier: string): string | null {
  const base = path.resolve(path.dirname(fromFile), specifier);
  const stem = base.replace(/\.(js|ts)$/, '');
  for (const candidate of [`${stem}.ts`, path.join(base, 'index.ts')]) {
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  }
  return null;
}

/** Every relative import of every .ts file under `folders` (relative to `root`); bare package imports are left out. */
export function importGraph(root: string, folders: readonly string[]): ImportGraph {
  const graph = new Map<string, string[]>();
  const relative = (file: string) => path.relative(root, file).split(path.sep).join('/');
  for (const folder of folders) {
    for (const file of tsFilesUnder(path.join(root, folder))) {
      const imported = ts
        .preProcessFile(readFileSync(file, 'utf8'), true, true)
        .importedFiles.map((ref) => ref.fileName)
        .filter((specifier) => specifier.startsWith('.'))
        .map((specifier) => resolveRelative(file, specifier))
        .filter((target): target is string => target !== null)
        .map(relative);
      graph.set(relative(file), [...new Set(imported)]);
    }
  }
  return graph;
}

/**
 * Tarjan's strongly connected components, keeping those that are cycles: two or more files that
 * reach each other, or one file importing itself. Iterative, so a long import chain cannot
 * overflow the stack.
 */
export function importCycles(graph: ImportGraph): string[][] {
  const index = new Map<string, number>();
  const lowLink = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  let nextIndex = 0;
  const edges = (file: string) => (graph.get(file) ?? []).filter((target) => graph.has(target));

  for (const start of graph.keys()) {
    if (index.has(start)) continue;
    const work: { file: string; next: number }[] = [];
    const visit = (file: string) => {
      index.set(file, nextIndex);
      lowLink.set(file, nextIndex);
      nextIndex += 1;
      stack.push(file);
      onStack.add(file);
      work.push({ file, next: 0 });
    };
    visit(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      const targets = edges(frame.file);
      if (frame.next < targets.length) {
        const target = targets[frame.next];
        frame.next += 1;
        if (!index.has(target)) visit(target);
        else if (onStack.has(target)) lowLink.set(frame.file, Math.min(lowLink.get(frame.file)!, index.get(target)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent !== undefined) lowLink.set(parent.file, Math.min(lowLink.get(parent.file)!, lowLink.get(frame.file)!));
      if (lowLink.get(frame.file) !== index.get(frame.file)) continue;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== frame.file);
      if (component.length > 1 || targets.includes(frame.file)) cycles.push(component.sort());
    }
  }
  return cycles;
}

/** One loop through a cycle's files, starting and ending at its first file: the path to show in a failure. */
export function loopThrough(graph: ImportGraph, component: readonly string[]): string[] {
  const members = new Set(component);
  const start = component[0];
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift()!;
    for (const target of graph.get(file) ?? []) {
      if (!members.has(target)) continue;
      if (target === start) {
        const loop = [file];
        while (loop[0] !== start) loop.unshift(cameFrom.get(loop[0])!);
        return [...loop, start];
      }
      if (!cameFrom.has(target)) {
        cameFrom.set(target, file);
        queue.push(target);
      }
    }
  }
  return [...component];
}
