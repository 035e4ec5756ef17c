/**
 * Finds references that lead nowhere: a repository path (`src/upstream/headers.ts`,
 * `docs/decisions.md#d2-native-requests-pass-through`) naming a file that does not exist or a
 * section its Markdown file does not have, a Markdown link doing the same, and any mention of the
 * documents Tollgate was first written from, which are not in the repository.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * What the checker needs to know about the repository: which paths exist, which anchors a Markdown file has.
 */
export interface Repository {
  exists(relativePath: string): boolean;
  anchors(relativeMarkdownPath: string): ReadonlySet<string>;
  /** Whether some file anywhere in the repository has this name (`relay.ts`). */
  hasFileNamed(name: string): boolean;
}

/** Top-level folders whose paths count as references when written from the repository's root. */
const ROOTS = ['src', 'plugins', 'test', 'bench', 'console', 'docs', 'scripts', 'deploy', 'schemas', 'bin'];

/**
 * A path from the root: not preceded by anything that makes it part of a longer path or a URL, made
 * of path characters, optionally with an anchor.
 */
const ROOT_PATH = new RegExp(`(?<![\\w./@:-])((?:${ROOTS.join('|')})/[\\w./-]*)(#[\\w-]+)?`, 'g');

/**
 * A file named bare in Markdown code (`relay.ts`): the page says where it lives around it, so it is
 * enough that a file of that name exists; a file renamed or merged away leaves it naming nothing.
 */
const BARE_FILE = /`([\w][\w.-]*\.(?:ts|js|mjs|json|md|ya?ml))`/g;

/** A Markdown link or image target: `](target)`. */
const MARKDOWN_LINK = /\]\(([^)\s]+)\)/g;

/**
 * The outside documents, spelled in pieces so this file does not mention them itself. The section
 * sign numbered their sections; nothing in Tollgate's own docs is numbered that way.
 */
const OUTSIDE: readonly RegExp[] = [
  new RegExp(`\\b${'DECI' + 'SIONS'}\\b`),
  new RegExp(`\\b${'RELIA' + 'BILITY'}\\b`),
  new RegExp(`\\b${'PROTO' + 'COLS'}\\.md`),
  new RegExp(`\\b${'ARCHI' + 'TECTURE'}\\.md`),
  new RegExp(`\\b${'ST' + 'YLE'}\\.md`),
  new RegExp(`${'gateway' + '-spec'}`),
  new RegExp(`\\.\\./${'sha' + 'red'}(?![\\w-])`),
  /\u00a7/,
];

export interface Problem {
  readonly file: string;
  readonly line: number;
  readonly reference: string;
  readonly why: string;
}

/** GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped, spaces as `-`. */
export function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/<[^>]*>/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Every anchor of a Markdown text: heading slugs (repeats numbered as GitHub does) and `<a id="…">`. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced) continue;
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const base = slug(heading[1].replace(/`/g, ''));
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const id of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id[1]);
  }
  return anchors;
}

/**
 * A file that names made-up paths on purpose (a test's sample import graph) says so with this
 * marker; its paths are then not looked up, but it may still not mention the outside documents.
 */
export const SAMPLES_MARKER = 'references: made-up paths';

/** The problems in one file's text; `file` is its path from the repository's root. */
export function referenceProblems(file: string, text: string, repo: Repository): Problem[] {
  const problems: Problem[] = [];
  const samples = text.includes(SAMPLES_MARKER);
  const isMarkdown = file.endsWith('.md');
  const lines = text.split('\n');
  lines.forEach((line, index) => {
    const at = (reference: string, why: string): void => {
      problems.push({ file, line: index + 1, reference, why });
    };
    for (const pattern of OUTSIDE) {
      const match = pattern.exec(line);
      if (match) at(match[0], 'names a document outside the repository');
    }
    if (samples) return;
    for (const match of line.matchAll(ROOT_PATH)) {
      const target = match[1].replace(/[.]+$/, '');
      checkTarget(file, target, match[2]?.slice(1), `${target}${match[2] ?? ''}`, repo, at);
    }
    if (!isMarkdown) return;
    for (const match of line.matchAll(BARE_FILE)) {
      if (!repo.hasFileNamed(match[1])) at(match[1], `no file named ${match[1]} in the repository`);
    }
    for (const match of line.matchAll(MARKDOWN_LINK)) {
      const link = match[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue;
      const [target, anchor] = splitAnchor(link);
      if (target === '' && (anchor === undefined || anchor === '')) continue;
      const relative = target === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), target));
      if (relative.startsWith('..')) {
        at(link, 'leads outside the repository');
        continue;
      }
      checkTarget(file, relative, anchor, link, repo, at);
    }
  });
  return problems;
}

function splitAnchor(link: string): [string, string | undefined] {
  const hash = link.indexOf('#');
  return hash < 0 ? [link, undefined] : [link.slice(0, hash), link.slice(hash + 1)];
}

function checkTarget(
  self: string,
  target: string,
  anchor: string | undefined,
  reference: string,
  repo: Repository,
  at: (reference: string, why: string) => void,
): void {
  const bare = target.replace(/\/$/, '');
  if (bare !== self && !repo.exists(bare)) {
    at(reference, `no file ${bare} in the repository`);
    return;
  }
  if (anchor === undefined || anchor === '') return;
  if (!bare.endsWith('.md')) {
    at(reference, 'an anchor on a file that is not Markdown');
    return;
  }
  if (!repo.anchors(bare).has(anchor)) at(reference, `${bare} has no section #${anchor}`);
}

/** The repository on disk under `root`. */
export function repositoryAt(root: string): Repository {
  const cache = new Map<string, ReadonlySet<string>>();
  let names: Set<string> | undefined;
  return {
    exists: (relative) => existsSync(path.join(root, relative)),
    hasFileNamed: (name) => {
      names ??= new Set(allFiles(root).map((file) => path.posix.basename(file)));
      return names.has(name);
    },
    anchors: (relative) => {
      let anchors = cache.get(relative);
      if (!anchors) {
        anchors = anchorsOf(readFileSync(path.join(root, relative), 'utf8'));
        cache.set(relative, anchors);
      }
      return anchors;
    },
  };
}

/** Every file of the repository, as paths from `root`; build output, dependencies and dot folders left out. */
function allFiles(root: string): string[] {
  const files: string[] = [];
  const walk = (relative: string): void => {
    for (const entry of readdirSync(path.join(root, relative), { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name === 'dist' || entry.name.startsWith('.')) continue;
      const child = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) walk(child);
      else files.push(child);
    }
  };
  walk('');
  return files;
}

const TEXT = /\.(?:ts|mts|js|mjs|cjs|md|json|ya?ml|html|css|sh|txt)$|(?:^|\/)Dockerfile$/;

/**
 * Every text file under the given roots (files or folders), as paths from `root`; build output and
 * dependencies left out.
 */
export function textFiles(root: string, roots: readonly string[]): string[] {
  const files: string[] = [];
  const walk = (relative: string): void => {
    const full = path.join(root, relative);
    if (!existsSync(full)) return;
    if (statSync(full).isDirectory()) {
      for (const entry of readdirSync(full)) {
        if (entry === 'node_modules' || entry === 'dist' || entry.startsWith('.')) continue;
        walk(path.posix.join(relative, entry));
      }
    } else if (TEXT.test(relative) && !relative.endsWith('package-lock.json')) {
      files.push(relative);
    }
  };
  for (const start of roots) walk(start);
  return files.sort();
}
