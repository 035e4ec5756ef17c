/** Problems found while reading the YAML itself, before any schema applies: syntax errors and duplicate keys. */
import { isScalar, type Document } from 'yaml';
import type { ConfigIssue } from './config-error';
import { formatFieldPath, type YamlLocator } from './locate';
import { walkYaml } from './yaml-walk';

/** Syntax errors and warnings (e.g. an unknown `!tag`) from the parser, each at its source position. */
export function syntaxIssues(doc: Document, locator: YamlLocator): ConfigIssue[] {
  // Warnings count too: a gateway config that YAML only half understood should not start a server.
  return [...doc.errors, ...doc.warnings].map((problem) =>
    locator.issueAtOffset(problem.pos[0], '', `YAML syntax: ${OPERATOR_WORDING[problem.code] ?? problem.message}`),
  );
}

// The parser's wording where it addresses programmers rather than whoever edits the file.
const OPERATOR_WORDING: Readonly<Partial<Record<string, string>>> = {
  MULTIPLE_DOCS: 'the file must hold a single document: remove the "---" separator',
};

/**
 * Keys written twice in one mapping. The parser runs with `uniqueKeys: false` so that this walk can
 * name the field and the earlier line instead of the parser's bare "Map keys must be unique".
 */
export function duplicateKeyIssues(doc: Document, locator: YamlLocator): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  walkYaml(doc, {
    map(node, path) {
      const firstOffset = new Map<string, number>();
      for (const pair of node.items) {
        if (!isScalar(pair.key) || !pair.key.range) continue;
        const key = String(pair.key.value);
        const offset = pair.key.range[0];
        const earlier = firstOffset.get(key);
        if (earlier === undefined) {
          firstOffset.set(key, offset);
          continue;
        }
        const firstLine = locator.positionOf(earlier).line;
        issues.push(locator.issueAtOffset(offset, formatFieldPath([...path, key]), `duplicate key "${key}" (first at line ${firstLine})`));
      }
    },
  });
  return issues;
}
