/** A depth-first walk over a parsed YAML document that keeps track of each node's field path. */
import { isMap, isScalar, isSeq, type Document, type Node, type Scalar, type YAMLMap } from 'yaml';
import type { FieldPath } from './locate';

/** Callbacks for the node kinds the loader inspects before converting to plain JS. */
export interface YamlVisitor {
  /** Every mapping, before its values are visited. */
  map?(node: YAMLMap, path: FieldPath): void;
  /** Every scalar in value position (map values and list items; never keys). */
  scalarValue?(node: Scalar, path: FieldPath): void;
}

/** Visits the document's mappings and value scalars. Aliases are not followed: their anchor is visited where it was written. */
export function walkYaml(doc: Document, visitor: YamlVisitor): void {
  visit(doc.contents, [], visitor);
}

function visit(node: Node | null, path: FieldPath, visitor: YamlVisitor): void {
  if (isScalar(node)) {
    visitor.scalarValue?.(node, path);
  } else if (isMap(node)) {
    visitor.map?.(node, path);
    for (const pair of node.items) {
      // Non-scalar keys cannot name a config field; the schema reports them through toJS() as unknown fields.
      if (isScalar(pair.key)) visit(pair.value as Node | null, [...path, String(pair.key.value)], visitor);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, index) => visit(item as Node | null, [...path, index], visitor));
  }
}
