import { expect } from 'chai';
import path from 'node:path';
import { GATEWAY_SCHEMA_FILE, pluginSchemaFiles, readSchema } from '../../src/config/schema';
import { PACKAGE_ROOT } from '../../src/paths';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

function isObject(value: Json | undefined): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Every subschema in `schema`, each with a readable location, found by following the keywords that hold schemas. */
function subschemas(schema: JsonObject, at: string): { at: string; schema: JsonObject }[] {
  const found = [{ at, schema }];
  const named = ['properties', '$defs'] as const;
  for (const keyword of named) {
    const group = schema[keyword];
    if (!isObject(group)) continue;
    for (const [name, child] of Object.entries(group)) {
      if (isObject(child)) found.push(...subschemas(child, `${at}.${name}`));
    }
  }
  for (const keyword of ['items', 'additionalProperties', 'propertyNames'] as const) {
    const child = schema[keyword];
    if (isObject(child)) found.push(...subschemas(child, `${at}[${keyword}]`));
  }
  return found;
}

const SCHEMA_FILES = [GATEWAY_SCHEMA_FILE, ...pluginSchemaFiles()];

describe('config/schema', () => {
  for (const file of SCHEMA_FILES) {
    const name = path.relative(PACKAGE_ROOT, file);
    const root = readSchema(file) as JsonObject;

    it(`gives every property a description in ${name}`, () => {
      const missing: string[] = [];
      for (const { at, schema } of subschemas(root, '')) {
        if (!isObject(schema.properties)) continue;
        for (const [field, child] of Object.entries(schema.properties)) {
          if (!isObject(child) || typeof child.description !== 'string' || child.description.trim() === '') missing.push(`${at}.${field}`);
        }
      }
      expect(missing).to.deep.equal([]);
    });

    it(`closes every object schema with additionalProperties in ${name}`, () => {
      const open = subschemas(root, '')
        .filter(({ schema }) => schema.type === 'object' && schema.additionalProperties === undefined)
        .map(({ at }) => at || '(root)');
      expect(open).to.deep.equal([]);
    });

    it(`has a description and no $id on ${name}, so editors resolve its $refs relative to the file`, () => {
      expect(root).to.not.have.property('$id');
      expect(root.description).to.be.a('string');
    });
  }

  it('has a plugins entry for each plugin schema file, referring to that file, and no other', () => {
    const gateway = readSchema(GATEWAY_SCHEMA_FILE) as JsonObject;
    const plugins = ((gateway.properties as JsonObject).plugins as JsonObject).properties as JsonObject;
    const referred = Object.entries(plugins).map(([name, entry]) => [name, path.resolve(path.dirname(GATEWAY_SCHEMA_FILE), (entry as JsonObject).$ref as string)]);
    const files = pluginSchemaFiles().map((file) => [path.basename(path.dirname(file)), file]);
    expect(referred.sort()).to.deep.equal(files);
  });
});
