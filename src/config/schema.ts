/** The JSON Schema check of gateway.yaml: ajv, compiled once per process from `schemas/`. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import Ajv2020, { type AnySchemaObject, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import { PACKAGE_ROOT, SCHEMAS_DIR } from '../paths';

/** The gateway schema file; it `$ref`s each plugin's schema, `plugins/<name>/schema.json`. */
export const GATEWAY_SCHEMA_FILE = path.join(SCHEMAS_DIR, 'gateway.schema.json');
/** The folder of plugins: each has its own folder, holding its code and its `schema.json`. */
const PLUGINS_DIR = path.join(PACKAGE_ROOT, 'plugins');

/** A plugin's schema file. */
function pluginSchemaFile(name: string): string {
  return path.join(PLUGINS_DIR, name, 'schema.json');
}

let validator: ValidateFunction | undefined;

/** Reads and parses one schema file. */
export function readSchema(file: string): AnySchemaObject {
  return JSON.parse(readFileSync(file, 'utf8')) as AnySchemaObject;
}

/** Every plugin schema file, sorted by plugin name, as absolute paths. */
export function pluginSchemaFiles(): string[] {
  return readdirSync(PLUGINS_DIR, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => pluginSchemaFile(entry.name))
    .filter((file) => existsSync(file))
    .sort();
}

function compileGatewaySchema(): ValidateFunction {
  const ajv = new Ajv2020({
    allErrors: true, // report every issue in one run, not the first
    useDefaults: true, // fill defaults into the data, so the frozen config is complete
    strict: true, // a typo in a schema keyword is a bug in Tollgate, caught at first load
    verbose: true, // errors carry their schema, which names the known fields for "did you mean"
  });
  // The schemas carry no `$id`, so an editor resolves the gateway schema's `$ref`s ("../plugins/auth/schema.json")
  // relative to the file itself; ajv does the same when each schema is keyed by its file's URL.
  for (const file of pluginSchemaFiles()) ajv.addSchema(readSchema(file), pathToFileURL(file).href);
  const gatewayKey = pathToFileURL(GATEWAY_SCHEMA_FILE).href;
  ajv.addSchema(readSchema(GATEWAY_SCHEMA_FILE), gatewayKey);
  return ajv.getSchema(gatewayKey)!;
}

/**
 * Validates parsed gateway.yaml in place: ajv fills in defaults as it goes. Returns ajv's errors,
 * empty when the data conforms.
 */
export function validateGatewaySchema(data: unknown): ErrorObject[] {
  validator ??= compileGatewaySchema();
  return validator(data) ? [] : [...(validator.errors ?? [])];
}
