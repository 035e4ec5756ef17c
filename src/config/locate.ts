/**
 * Maps a field path in the parsed config back to the YAML node it came from, so every issue can say
 * `file:line:col`. Positions come from the `LineCounter` the document was parsed with.
 */
import { isAlias, isMap, isPair, isScalar, isSeq, type Document, type LineCounter, type Node, type Pair } from 'yaml';
import type { ConfigIssue } from './config-error';

/** A path into the config: map keys as strings, list indices as numbers. */
export type FieldPath = readonly (string | number)[];

/** Renders a path as operators read it: `models.claude-sonnet-5.routes[0].provider`. */
export function formatFieldPath(path: FieldPath): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? segment : `.${segment}`;
  }
  return out;
}

/** Whether an issue points at a field's key (unknown fields) or at its value (everything else). */
export type IssueTarget = 'value' | 'key';

/** The node a path reaches, with the pair it was found in (for pointing at the key). */
interface Found {
  readonly node: Node | null;
  readonly pair: Pair | null;
}

/** Builds positioned issues for one parsed document. */
export class YamlLocator {
  constructor(
    private readonly doc: Document,
    private readonly lineCounter: LineCounter,
    readonly file: string,
  ) {}

  /** An issue at the node for `path`; when that node does not exist (a default filled it), at its nearest ancestor. */
  issue(path: FieldPath, message: string, target: IssueTarget = 'value'): ConfigIssue {
    const offset = this.offsetOf(path, target);
    return this.issueAtOffset(offset, formatFieldPath(path), message);
  }

  /** An issue at a raw source offset, for errors the YAML parser reports by position. */
  issueAtOffset(offset: number, path: string, message: string): ConfigIssue {
    const { line, col } = this.positionOf(offset);
    return { file: this.file, line, col, path, message };
  }

  /** 1-based line and column of a source offset. */
  positionOf(offset: number): { line: number; col: number } {
    return this.lineCounter.linePos(offset);
  }

  /** Whether the operator wrote `path` in the file (as opposed to a default supplying it). */
  has(path: FieldPath): boolean {
    return this.walk(path).length === path.length + 1;
  }

  private offsetOf(path: FieldPath, target: IssueTarget): number {
    const trail = this.walk(path);
    const last = trail[trail.length - 1];
    const reachedAll = trail.length === path.length + 1;
    const keyNode = last.pair?.key;
    if (reachedAll && target === 'key' && isScalar(keyNode) && keyNode.range) return keyNode.range[0];
    // Walk back to the deepest node that has a position: a pair with no value (`? key`) has none.
    for (let i = trail.length - 1; i >= 0; i--) {
      const { node, pair } = trail[i];
      if (node?.range) return node.range[0];
      if (isScalar(pair?.key) && pair.key.range) return pair.key.range[0];
    }
    return 0;
  }

  /** The root plus one entry per path segment found, stopping at the first segment that is not there. */
  private walk(path: FieldPath): Found[] {
    const trail: Found[] = [{ node: this.resolve(this.doc.contents), pair: null }];
    for (const segment of path) {
      const current = trail[trail.length - 1].node;
      const next = this.child(current, segment);
      if (!next) break;
      trail.push(next);
    }
    return trail;
  }

  private child(node: Node | null, segment: string | number): Found | null {
    if (isMap(node)) {
      // With duplicate keys the last one wins in toJS(), so look from the end.
      const pair = node.items.findLast((item) => isScalar(item.key) && String(item.key.value) === String(segment));
      if (!pair || !isPair(pair)) return null;
      return { node: this.resolve(pair.value as Node | null), pair };
    }
    if (isSeq(node)) {
      const item = node.items[Number(segment)];
      return item === undefined ? null : { node: this.resolve(item as Node | null), pair: null };
    }
    return null;
  }

  /** Follows `*alias` references to the anchored node, whose position is where the value was written. */
  private resolve(node: Node | null | undefined): Node | null {
    if (isAlias(node)) return (node.resolve(this.doc) as Node | undefined) ?? node;
    return node ?? null;
  }
}
