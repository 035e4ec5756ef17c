/**
 * The ajv validators of `schemas/requests/`, compiled once, and the translation of ajv's findings
 * into one client-facing sentence with the offending field as `param`.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import { SCHEMAS_DIR } from '../paths';
import { ENDPOINTS, type EndpointId } from '../protocols/types';
import { GatewayError } from './errors';

// Every endpoint has its schema file: a new endpoint fails at load until it has one.
const ENDPOINT_IDS = Object.keys(ENDPOINTS) as EndpointId[];

function compileAll(): Record<EndpointId, ValidateFunction> {
  const ajv = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true });
  const entries = ENDPOINT_IDS.map((id) => {
    const file = path.join(SCHEMAS_DIR, 'requests', `${id}.schema.json`);
    return [id, ajv.compile(JSON.parse(readFileSync(file, 'utf8')) as object)] as const;
  });
  return Object.fromEntries(entries) as Record<EndpointId, ValidateFunction>;
}

// Compiled at load, so no request pays for it.
const validators = compileAll();

/** `a.b[0].c` from ajv's `/a/b/0/c`. */
function fieldPath(instancePath: string, extra?: string): string {
  const parts = instancePath.split('/').slice(1);
  if (extra !== undefined) parts.push(extra);
  return parts.reduce((out, part) => (/^\d+$/.test(part) ? `${out}[${part}]` : out ? `${out}.${part}` : part), '');
}

function describe(error: ErrorObject): GatewayError {
  const params = error.params as Record<string, unknown>;
  if (error.keyword === 'required') {
    const field = fieldPath(error.instancePath, String(params.missingProperty));
    return new GatewayError('TOLLGATE_ERR_REQUEST_INVALID', `Missing required parameter: '${field}'.`, { param: field });
  }
  const field = fieldPath(error.instancePath);
  if (field === 'messages' && error.keyword === 'minItems') {
    return new GatewayError('TOLLGATE_ERR_REQUEST_INVALID', 'messages: at least one message is required.', {
      param: 'messages',
    });
  }
  const what =
    error.keyword === 'type'
      ? `expected ${String(params.type).replace(',null', '')}`
      : error.keyword === 'anyOf'
        ? 'expected a string or a non-empty list'
        : (error.message ?? 'invalid');
  return new GatewayError('TOLLGATE_ERR_REQUEST_INVALID', `Invalid value for '${field}': ${what}.`, { param: field });
}

/** Throws a 400 GatewayError naming the first field that breaks the endpoint's request schema. */
export function validateRequest(endpoint: EndpointId, body: unknown): void {
  const validate = validators[endpoint];
  if (validate(body)) return;
  throw describe((validate.errors ?? [])[0]);
}
