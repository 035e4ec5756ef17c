/**
 * Turns ajv's errors into messages an operator can act on, each positioned at its YAML node.
 * ajv says `must be integer`; an operator needs `expected integer, got string "80a"` and the line.
 */
import type { AnySchemaObject, ErrorObject } from 'ajv/dist/2020';
import type { ConfigIssue } from './config-error';
import type { FieldPath, IssueTarget, YamlLocator } from './locate';
import { closestName } from './suggest';

/** How a pattern reads in a message: what the string names, and the rule in words. */
interface PatternHint {
  readonly what: string;
  readonly rule: string;
}

// Keyed by the exact pattern strings in schemas/gateway.schema.json; an unlisted pattern falls back to the regex.
const PATTERN_HINTS: Readonly<Record<string, PatternHint>> = {
  '^[a-z0-9][a-z0-9._-]*$': { what: 'provider id', rule: 'use lower-case letters, digits, ".", "_" and "-", starting with a letter or digit' },
  '^[A-Za-z0-9][A-Za-z0-9._:/-]*$': { what: 'model id', rule: 'use letters, digits, ".", "_", ":", "/" and "-", starting with a letter or digit' },
  "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$": { what: 'header name', rule: "use letters, digits and !#$%&'*+-.^_`|~ only (RFC 9110 token)" },
  '^[^\\r\\n]*$': { what: 'header value', rule: 'must not contain a line break (CR or LF)' },
  '^(sqlite:|postgres(ql)?://)': { what: 'store url', rule: 'expected sqlite:<path> or postgres://user:password@host/db' },
  '^[0-9]{4}-[0-9]{2}-[0-9]{2}$': { what: 'version', rule: 'expected a date like 2023-06-01' },
  '^([^\\s:\\[\\]]+|\\[[0-9A-Fa-f:.]+\\]):[0-9]{1,5}$': { what: 'Sentinel or Cluster node address', rule: 'expected host:port, such as 10.0.0.5:26379 or [::1]:26379' },
};

// YAML words for JSON types: operators write mappings and lists, not objects and arrays.
const TYPE_NAMES: Readonly<Record<string, string>> = { object: 'mapping', array: 'list' };

/** Describes a value for "got ...": its YAML type and, for scalars, the value itself. */
function describeValue(value: unknown): string {
  if (value === null || value === undefined) return 'an empty value';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') {
    const shown = value.length > 40 ? `${value.slice(0, 37)}...` : value;
    return `string ${JSON.stringify(shown)}`;
  }
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a scalar by now: lists and mappings returned above
  return `${typeof value} ${String(value)}`;
}

/** Splits a JSON pointer into a field path, turning segments that index a list into numbers. */
function pathFromPointer(pointer: string, data: unknown): FieldPath {
  if (pointer === '') return [];
  const path: (string | number)[] = [];
  let current: unknown = data;
  for (const raw of pointer.slice(1).split('/')) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    const isIndex = Array.isArray(current);
    path.push(isIndex ? Number(segment) : segment);
    current = current !== null && typeof current === 'object' ? (current as Record<string, unknown>)[segment] : undefined;
  }
  return path;
}

/** ajv's errors as positioned issues, without the ones that only repeat another. */
export function schemaErrorsToIssues(errors: readonly ErrorObject[], data: unknown, locator: YamlLocator): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const error of errors) {
    if (isExplainedBySuggestion(error, errors) || isInsideAlternatives(error, errors)) continue;
    const described = describeError(error, pathFromPointer(error.instancePath, data));
    if (described) issues.push(locator.issue(described.path, described.message, described.target));
  }
  return issues;
}

/**
 * `protocl: openai` yields both "unknown field protocl (did you mean protocol?)" and "missing required
 * field protocol"; the second says nothing the first does not, so it is dropped.
 */
function isExplainedBySuggestion(error: ErrorObject, all: readonly ErrorObject[]): boolean {
  if (error.keyword !== 'required') return false;
  const missing = String((error.params as Record<string, unknown>).missingProperty);
  return all.some(
    (other) =>
      other.keyword === 'additionalProperties' &&
      other.instancePath === error.instancePath &&
      closestName(String((other.params as Record<string, unknown>).additionalProperty), knownFields(other.parentSchema)) === missing,
  );
}

/**
 * `workers: 0` fails each alternative of a oneOf/anyOf and then the oneOf itself; the one line that
 * lists the alternatives says it all, so the failures of the alternatives are dropped.
 */
function isInsideAlternatives(error: ErrorObject, all: readonly ErrorObject[]): boolean {
  return all.some(
    (other) =>
      (other.keyword === 'oneOf' || other.keyword === 'anyOf') &&
      other !== error &&
      other.instancePath === error.instancePath &&
      error.schemaPath.startsWith(`${other.schemaPath}/`),
  );
}

/** One alternative of a oneOf/anyOf in words: `"auto"`, `an integer of at least 1`. */
function describeAlternative(schema: AnySchemaObject): string {
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.map((value: unknown) => JSON.stringify(value)).join(', ');
  const type = typeList(schema.type);
  return schema.minimum === undefined ? type : `${type} of at least ${String(schema.minimum)}`;
}

function knownFields(schema: AnySchemaObject | undefined): string[] {
  return Object.keys((schema?.properties ?? {}) as Record<string, unknown>).sort();
}

interface Described {
  readonly path: FieldPath;
  readonly message: string;
  readonly target: IssueTarget;
}

function describeError(error: ErrorObject, path: FieldPath): Described | null {
  const params = error.params as Record<string, unknown>;
  const at = (message: string): Described => ({ path, message, target: 'value' });
  switch (error.keyword) {
    case 'propertyNames':
      return null; // ajv reports the failing inner keyword (the pattern) separately, with the name.
    case 'required':
      return at(`missing required field "${String(params.missingProperty)}"`);
    case 'additionalProperties':
      return unknownField(path, String(params.additionalProperty), error.parentSchema);
    case 'type':
      return at(`expected ${typeList(params.type)}, got ${describeValue(error.data)}`);
    case 'enum':
      return at(`must be one of ${(params.allowedValues as unknown[]).map(String).join(', ')}; got ${describeValue(error.data)}`);
    case 'const':
      return at(`must be ${JSON.stringify(params.allowedValue)}, got ${describeValue(error.data)}`);
    case 'pattern':
      return patternError(error, path);
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return at(`must be ${BOUND_WORDS[error.keyword]} ${String(params.limit)}, got ${describeValue(error.data)}`);
    case 'minItems':
      return at(`must list at least ${String(params.limit)} item${params.limit === 1 ? '' : 's'}, got ${(error.data as unknown[]).length}`);
    case 'minLength':
      return at(params.limit === 1 ? 'must not be empty' : `must be at least ${String(params.limit)} characters long`);
    case 'oneOf':
    case 'anyOf': {
      const alternatives = ((error.schema ?? []) as AnySchemaObject[]).map(describeAlternative);
      return at(`expected ${alternatives.join(' or ')}, got ${describeValue(error.data)}`);
    }
    default:
      return at(error.message ?? `fails the schema's "${error.keyword}" rule`);
  }
}

const BOUND_WORDS: Readonly<Record<string, string>> = {
  minimum: 'at least',
  maximum: 'at most',
  exclusiveMinimum: 'greater than',
  exclusiveMaximum: 'less than',
};

function typeList(type: unknown): string {
  const names = (Array.isArray(type) ? type : [type]).map((name) => TYPE_NAMES[String(name)] ?? String(name));
  return names.join(' or ');
}

function unknownField(parent: FieldPath, name: string, parentSchema: AnySchemaObject | undefined): Described {
  const known = knownFields(parentSchema);
  // Under `plugins:` each key is a plugin's name, and a stray one is most likely a plugin that does not exist.
  const kind = parent.length === 1 && parent[0] === 'plugins' ? 'plugin' : 'field';
  const suggestion = closestName(name, known);
  const hint = suggestion !== undefined ? `did you mean "${suggestion}"?` : `known: ${known.join(', ') || 'none'}`;
  return { path: [...parent, name], message: `unknown ${kind} "${name}" (${hint})`, target: 'key' };
}

function patternError(error: ErrorObject, path: FieldPath): Described {
  const pattern = String((error.params as Record<string, unknown>).pattern);
  const hint = PATTERN_HINTS[pattern];
  // A propertyNames pattern fails on a key: point at the key and name it.
  if (error.propertyName !== undefined) {
    const name = error.propertyName;
    const message = `invalid ${hint?.what ?? 'name'} ${JSON.stringify(name)}: ${hint?.rule ?? `must match ${pattern}`}`;
    return { path: [...path, name], message, target: 'key' };
  }
  const rule = hint?.rule ?? `must match ${pattern}`;
  return { path, message: `${rule}, got ${describeValue(error.data)}`, target: 'value' };
}
