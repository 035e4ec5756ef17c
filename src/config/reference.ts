/**
 * The gateway.yaml field reference, generated from the schemas' descriptions so docs/configuration.md
 * can never drift from what the loader accepts (`tollgate config reference`; a test compares the two).
 */
import path from 'node:path';
import type { AnySchemaObject } from 'ajv/dist/2020';
import { GATEWAY_SCHEMA_FILE, readSchema } from './schema';

interface Row {
  readonly field: string;
  readonly type: string;
  readonly fallback: string;
  readonly description: string;
}

function typeOf(schema: AnySchemaObject): string {
  if (Array.isArray(schema.enum)) return schema.enum.map((value: unknown) => JSON.stringify(value)).join(' \\| ');
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (Array.isArray(schema.type)) return schema.type.join(' \\| ');
  if (typeof schema.type === 'string') return schema.type === 'object' && schema.additionalProperties ? 'map' : schema.type;
  if (Array.isArray(schema.anyOf ?? schema.oneOf)) {
    return ((schema.anyOf ?? schema.oneOf) as AnySchemaObject[]).map((option) => typeOf(option)).join(' \\| ');
  }
  return '';
}

function shownDefault(schema: AnySchemaObject): string {
  if (schema.default === undefined) return '';
  const value = JSON.stringify(schema.default);
  return value === '{}' ? '' : `\`${value}\``;
}

/**
 * Follows a `$ref` to the current document's `$defs` or to a plugin schema file, returning the schema
 * and the document it lives in (a plugin file's own `#/$defs` refs resolve against that file).
 */
function resolve(schema: AnySchemaObject, root: AnySchemaObject): { own: AnySchemaObject; root: AnySchemaObject } {
  const ref = schema.$ref as string | undefined;
  if (ref === undefined) return { own: schema, root };
  if (ref.startsWith('#/$defs/')) return resolve((root.$defs as Record<string, AnySchemaObject>)[ref.slice('#/$defs/'.length)], root);
  const file = readSchema(path.resolve(path.dirname(GATEWAY_SCHEMA_FILE), ref));
  return { own: file, root: file };
}

function walk(schema: AnySchemaObject, field: string, documentRoot: AnySchemaObject, rows: Row[]): void {
  const { own, root } = resolve(schema, documentRoot);
  if (field !== '') {
    const description = (schema.description ?? own.description ?? '') as string;
    rows.push({ field, type: typeOf(own), fallback: shownDefault(schema.default === undefined ? own : schema), description });
  }
  const properties = (own.properties ?? {}) as Record<string, AnySchemaObject>;
  for (const [name, child] of Object.entries(properties)) walk(child, field === '' ? name : `${field}.${name}`, root, rows);
  if (own.additionalProperties && typeof own.additionalProperties === 'object') {
    const entry = own.additionalProperties as AnySchemaObject;
    walk(entry, `${field}.${(entry.title as string | undefined) ?? '<id>'}`, root, rows);
  }
  if (own.items && typeof own.items === 'object') walk(own.items as AnySchemaObject, `${field}[]`, root, rows);
}

/** The reference as a Markdown table, one row per field, in schema order. */
export function configReference(): string {
  const root = readSchema(GATEWAY_SCHEMA_FILE);
  const rows: Row[] = [];
  walk(root, '', root, rows);
  const escape = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  return [
    '| Field | Type | Default | Meaning |',
    '|---|---|---|---|',
    ...rows.map((row) => `| \`${row.field}\` | ${row.type} | ${row.fallback} | ${escape(row.description)} |`),
  ].join('\n');
}
