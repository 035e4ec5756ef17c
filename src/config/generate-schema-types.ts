/**
 * Writes `src/config/schema-types.ts`, the TypeScript shape of gateway.yaml, from its JSON schemas
 * (`npm run schema:types`), so each config field is written once: in its schema. The types describe
 * the data after ajv has validated it and applied the defaults, so a field with a `default` is always
 * there. Only the keywords our schemas use are understood; any other throws, so a schema that
 * outgrows this generator fails loudly instead of yielding a wrong type.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AnySchemaObject } from 'ajv/dist/2020';
import { PACKAGE_ROOT } from '../paths';
import { GATEWAY_SCHEMA_FILE, readSchema } from './schema';

/** Where the generated types are committed; a test regenerates them and compares. */
export const SCHEMA_TYPES_FILE = path.join(PACKAGE_ROOT, 'src', 'config', 'schema-types.ts');

/** Keywords that only constrain values, so they change nothing in a type. */
const VALUE_ONLY = new Set(['$schema', 'title', 'description', 'default', 'minimum', 'exclusiveMinimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'maxItems', 'pattern', 'propertyNames', 'uniqueItems', 'minProperties']);
const SHAPING = new Set(['type', 'enum', 'const', 'anyOf', 'oneOf', '$ref', 'properties', 'required', 'additionalProperties', 'items', '$defs']);

/** One schema file and the name of the type its root becomes; its `$defs` are named after it. */
interface Document {
  readonly file: string;
  readonly schema: AnySchemaObject;
  /** The root's type name, e.g. `RateLimitPluginConfig`. */
  readonly typeName: string;
  /** Prefix of its `$defs` types: `Upstream` for upstream's `failover` (UpstreamFailover). */
  readonly defsPrefix: string;
  /** Suffix of its `$defs` types: the gateway's `provider` is `ProviderData`. */
  readonly defsSuffix: string;
}

function pascal(name: string): string {
  return name.replace(/(^|[-_])([a-z0-9])/g, (_match, _sep: string, letter: string) => letter.toUpperCase());
}

/** A plugin's schema file (`../plugins/<name>/schema.json` from the gateway schema) as a document. */
function pluginDocument(file: string): Document {
  const plugin = path.basename(path.dirname(file));
  return { file, schema: readSchema(file), typeName: `${pascal(plugin)}PluginConfig`, defsPrefix: pascal(plugin), defsSuffix: '' };
}

class Generator {
  private readonly declarations: string[] = [];
  private readonly emitted = new Set<string>();

  /** The type name a `$ref` found in `from` stands for, declaring that type the first time. */
  reference(ref: string, from: Document): string {
    if (ref.startsWith('#/$defs/')) {
      const name = ref.slice('#/$defs/'.length);
      const typeName = `${from.defsPrefix}${pascal(name)}${from.defsSuffix}`;
      this.declare(typeName, (from.schema.$defs as Record<string, AnySchemaObject>)[name], from);
      return typeName;
    }
    if (ref.startsWith('#')) throw new Error(`${from.file}: unsupported $ref ${ref}`);
    const document = pluginDocument(path.resolve(path.dirname(from.file), ref));
    this.declare(document.typeName, document.schema, document);
    return document.typeName;
  }

  declare(typeName: string, schema: AnySchemaObject, document: Document): void {
    if (this.emitted.has(typeName)) return;
    this.emitted.add(typeName);
    // The slot is taken before the body declares what it refers to, so a type comes before its parts.
    const slot = this.declarations.push('') - 1;
    const body = this.type(schema, document, '');
    const declaration = body.startsWith('{') ? `export interface ${typeName} ${body}` : `export type ${typeName} = ${body};`;
    this.declarations[slot] = `${comment(schema.description, '')}${declaration}\n`;
  }

  /** The type of `schema`, written at `indent`. */
  type(schema: AnySchemaObject, document: Document, indent: string): string {
    for (const keyword of Object.keys(schema)) {
      if (!VALUE_ONLY.has(keyword) && !SHAPING.has(keyword)) throw new Error(`${document.file}: the keyword "${keyword}" is not understood by the type generator`);
    }
    if (typeof schema.$ref === 'string') return this.reference(schema.$ref, document);
    if (schema.const !== undefined) return literal(schema.const);
    if (Array.isArray(schema.enum)) return schema.enum.map(literal).join(' | ');
    // Either is a union to the type system; oneOf's "exactly one" only constrains values.
    const options: unknown = schema.anyOf ?? schema.oneOf;
    if (Array.isArray(options)) return union(options.map((option: AnySchemaObject) => this.type(option, document, indent)));
    switch (schema.type) {
      case 'string':
        return 'string';
      case 'integer':
      case 'number':
        return 'number';
      case 'boolean':
        return 'boolean';
      case 'array': {
        const item = this.type(schema.items as AnySchemaObject, document, indent);
        return /[ |]/.test(item) && !item.startsWith('{') ? `readonly (${item})[]` : `readonly ${item}[]`;
      }
      case 'object':
        return this.object(schema, document, indent);
      default:
        throw new Error(`${document.file}: the type ${JSON.stringify(schema.type)} is not understood by the type generator`);
    }
  }

  /** An object with known properties, or a map from any key to one type of value. */
  private object(schema: AnySchemaObject, document: Document, indent: string): string {
    const entries: unknown = schema.additionalProperties;
    if (schema.properties === undefined) {
      if (typeof entries !== 'object') throw new Error(`${document.file}: an object schema needs properties or an additionalProperties schema`);
      return `Readonly<Record<string, ${this.type(entries as AnySchemaObject, document, indent)}>>`;
    }
    if (entries !== false) throw new Error(`${document.file}: an object schema with properties must close them (additionalProperties: false)`);
    const required = new Set((schema.required ?? []) as string[]);
    const inner = `${indent}  `;
    const fields = Object.entries(schema.properties as Record<string, AnySchemaObject>).map(([name, property]) => {
      // ajv fills a default in, so after validation the field is there whether or not it was written.
      const always = required.has(name) || property.default !== undefined;
      const key = /^[A-Za-z_$][\w$]*$/.test(name) ? name : literal(name);
      return `${comment(property.description, inner)}${inner}readonly ${key}${always ? '' : '?'}: ${this.type(property, document, inner)};\n`;
    });
    return `{\n${fields.join('')}${indent}}`;
  }

  text(): string {
    return this.declarations.join('\n');
  }
}

/** A JSON value as a TypeScript literal type, strings in the project's single quotes. */
/** A union of the members, without the literals a wider member covers: `0 | number` says no more than `number`. */
function union(members: readonly string[]): string {
  const covered = (member: string) => (members.includes('number') && /^-?\d/.test(member)) || (members.includes('string') && member.startsWith("'"));
  return members.filter((member) => !covered(member)).join(' | ');
}

function literal(value: unknown): string {
  if (typeof value === 'string') return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw new Error(`the literal ${JSON.stringify(value)} is not understood by the type generator`);
}

/** A description as a TSDoc comment, wrapped to stay readable. */
function comment(description: unknown, indent: string): string {
  if (typeof description !== 'string') return '';
  const words = description.replace(/\*\//g, '*\\/').split(/\s+/);
  const lines: string[] = [];
  let line = '';
  for (const word of words) {
    if (line !== '' && indent.length + 3 + line.length + 1 + word.length > 110) {
      lines.push(line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  lines.push(line);
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`;
  return `${indent}/**\n${lines.map((text) => `${indent} * ${text}\n`).join('')}${indent} */\n`;
}

/** The generated file's text: every type gateway.yaml's schema and the plugins' schemas declare. */
export function schemaTypes(): string {
  const gateway: Document = { file: GATEWAY_SCHEMA_FILE, schema: readSchema(GATEWAY_SCHEMA_FILE), typeName: 'GatewayData', defsPrefix: '', defsSuffix: 'Data' };
  const generator = new Generator();
  generator.declare(gateway.typeName, gateway.schema, gateway);
  return [
    '/*',
    ' * Generated by `npm run schema:types` from schemas/gateway.schema.json and plugins/<name>/schema.json:',
    ' * edit the schemas, then regenerate (a test fails while this file and the schemas disagree).',
    ' * Each type is the data once ajv has validated it and filled in the defaults.',
    ' */',
    '',
    generator.text(),
  ].join('\n');
}

if (require.main === module) {
  writeFileSync(SCHEMA_TYPES_FILE, schemaTypes());
  console.log(`wrote ${path.relative(process.cwd(), SCHEMA_TYPES_FILE)}`);
}
