/**
 * OpenAI's published OpenAPI schemas as ajv validators, so tests can check that what Tollgate emits
 * on OpenAI routes is exactly what the SDKs expect. The fixture is read once per test run (the module
 * is cached) and each named schema is compiled on first use.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { PACKAGE_ROOT } from '../../src/paths';

/**
 * The structure of OpenAI's schemas that the tests use, extracted from its published OpenAPI document by
 * scripts/openai-schemas.mjs (which says how to refresh it).
 */
const SCHEMAS_PATH = path.resolve(PACKAGE_ROOT, 'test', 'fixtures', 'openai-schemas.json');

/** The `$id` under which `components` is registered, so `#/components/schemas/…` refs resolve. */
const SPEC_ID = 'https://tollgate.test/openai-openapi.json';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * Rewrites OpenAPI 3.0-style `nullable: true` (still present in parts of the 3.1 document) into JSON
 * Schema: a `type` gains "null" (and an `enum` null); anything else is wrapped in `anyOf` with null.
 */
function foldNullable(node: Json): Json {
  if (Array.isArray(node)) return node.map(foldNullable);
  if (node === null || typeof node !== 'object') return node;
  const out: { [key: string]: Json } = {};
  for (const [key, value] of Object.entries(node)) out[key] = foldNullable(value);
  if (out.nullable !== true) return out;
  delete out.nullable;
  if (typeof out.type === 'string' || Array.isArray(out.type)) {
    const types = Array.isArray(out.type) ? out.type : [out.type];
    out.type = types.includes('null') ? types : [...types, 'null'];
    if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
    return out;
  }
  const { description, ...rest } = out;
  if (Object.keys(rest).length === 0) return out; // `nullable` alone: anything goes already
  const wrapped: { [key: string]: Json } = { anyOf: [rest, { type: 'null' }] };
  if (description !== undefined) wrapped.description = description;
  return wrapped;
}

/** Validators for `components.schemas` of OpenAI's OpenAPI document. */
export interface OpenAISchemas {
  /** Names of every schema in the document. */
  readonly names: readonly string[];
  /** ajv's error text for `value` against the named schema, or null when it is valid. */
  errors(schemaName: string, value: unknown): string | null;
  /** Throws with ajv's error text unless `value` is valid against the named schema. */
  assertValid(schemaName: string, value: unknown): void;
  /** The schema of a Responses stream event by its `type` (`response.created` → `ResponseCreatedEvent`). */
  responsesEventSchema(eventType: string): string | undefined;
}

/** Maps each member of `ResponseStreamEvent` by the `type` constant it declares. */
function responsesEventSchemas(schemas: Record<string, Json>): Map<string, string> {
  const byType = new Map<string, string>();
  const union = schemas.ResponseStreamEvent as { anyOf?: Array<{ $ref?: string }> };
  for (const member of union.anyOf ?? []) {
    const name = member.$ref?.split('/').pop();
    const schema = name === undefined ? undefined : (schemas[name] as { properties?: { type?: { enum?: string[] } } });
    const eventType = schema?.properties?.type?.enum?.[0];
    if (name !== undefined && eventType !== undefined) byType.set(eventType, name);
  }
  return byType;
}

let cached: OpenAISchemas | null = null;

function load(): OpenAISchemas {
  const document = { components: JSON.parse(readFileSync(SCHEMAS_PATH, 'utf8')) as { schemas: Record<string, Json> } };
  const components = foldNullable(document.components);
  // Formats such as `unixtime` are OpenAI's own; they document, they do not constrain.
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema({ $id: SPEC_ID, components }, SPEC_ID);
  const names = Object.keys(document.components.schemas);
  const eventSchemas = responsesEventSchemas(document.components.schemas);

  const errors = (schemaName: string, value: unknown): string | null => {
    if (!names.includes(schemaName)) throw new Error(`no schema ${schemaName} in ${SCHEMAS_PATH}`);
    const validate = ajv.getSchema(`${SPEC_ID}#/components/schemas/${schemaName}`);
    if (validate === undefined) throw new Error(`ajv could not compile ${schemaName}`);
    return validate(value) ? null : ajv.errorsText(validate.errors, { dataVar: schemaName });
  };
  return {
    names,
    errors,
    assertValid(schemaName, value) {
      const text = errors(schemaName, value);
      if (text !== null) throw new Error(`${text}\nvalue: ${JSON.stringify(value).slice(0, 2000)}`);
    },
    responsesEventSchema: (eventType) => eventSchemas.get(eventType),
  };
}

/** The validators, built on the first call and shared by every test file after it. */
export function openAISchemas(): OpenAISchemas {
  cached ??= load();
  return cached;
}
