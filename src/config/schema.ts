/** The JSON Schema check of gateway.yaml: ajv, compiled once per process from `schemas/`. */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv2020, { type AnySchemaObject, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import { SCHEMAS_DIR } from '../paths';

/** The gateway schema file; it `$ref`s each plugin's schema under `schemas/plugins/`. */
export const GATEWAY_SCHEMA_FILE = path.join(SCHEMAS_DIR, 'gateway.schema.json');
/** The folder of plugin schemas, one `<plugin name>.schema.json` each. */
export const PLUGIN_SCHEMAS_DIR = path.join(SCHEMAS_DIR, 'plugins');

let validator: ValidateFunction | undefined;

/** Reads and parses one schema file. */
export function readSchema(file: string): AnySchemaObject {
  return JSON.parse(readFileSync(file, 'utf8')) as AnySchemaObject;
}

/** Every plugin schema file, sorted, as absolute paths. */
export function pluginSchemaFiles(): string[] {
  return readdirSync(PLUGIN_SCHEMAS_DIR)
    .filter((name) => name.endsWith('.schema.json'))
    .sort()
    .map((name) => path.join(PLUGIN_SCHEMAS_DIR, name));
}

function compileGatewaySchema(): ValidateFunction {
  const ajv = new Ajv2020({
    allErrors: true, // report every issue in one run, not the first
    useDefaults: true, // fill defaults into the data, so the frozen config is complete
    strict: true, // a typo in a schema keyword is a bug in Tollgate, caught at first load
    verbose: true, // errors carry their schema, which names the known fields for "did you mean"
  });
  // The schemas carry no `$id`, so an editor resolves the gateway schema's `$ref`s ("plugins/auth.schema.json")
  // relative to the file itself; ajv finds them under the same relative keys.
  for (const file of pluginSchemaFiles()) ajv.addSchema(readSchema(file), path.relative(SCHEMAS_DIR, file).split(path.sep).join('/'));
  return ajv.compile(readSchema(GATEWAY_SCHEMA_FILE));
}

/**
 * Validates parsed gateway.yaml in place: ajv fills in defaults as it goes. Returns ajv's errors,
 * empty when the data conforms.
 */
export function validateGatewaySchema(data: unknown): ErrorObject[] {
  validator ??= compileGatewaySchema();
  return validator(data) ? [] : [...(validator.errors ?? [])];
}
