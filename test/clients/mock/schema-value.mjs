/**
 * Tool arguments and structured answers that satisfy a JSON Schema, as a real model's would: the
 * mock upstreams call declared tools with these, and answer json_schema formats with them. A prompt
 * may fix the arguments itself ("use get_weather with {"city":"Paris"}"); anything left open is
 * filled with a plain value of the right type.
 */

/** A value valid against `schema` (the subset tool schemas use: objects, arrays, enums, scalars). */
export function valueFor(schema, hint = {}) {
  if (schema === undefined || schema === null || typeof schema !== 'object') return {};
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if (schema.const !== undefined) return schema.const;
  for (const key of ['anyOf', 'oneOf']) {
    if (Array.isArray(schema[key])) {
      const usable = schema[key].find((option) => option?.type !== 'null') ?? schema[key][0];
      return valueFor(usable, hint);
    }
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length > 0) return valueFor(Object.assign({}, ...schema.allOf), hint);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  switch (type) {
    case 'string':
      if (typeof hint === 'string') return hint;
      if (schema.format === 'date-time') return '2026-11-23T12:00:00Z';
      if (schema.format === 'uri') return 'https://example.com/';
      return 'Paris';
    case 'integer':
      return typeof hint === 'number' ? Math.trunc(hint) : Math.max(1, schema.minimum ?? 1);
    case 'number':
      return typeof hint === 'number' ? hint : Math.max(1, schema.minimum ?? 1);
    case 'boolean':
      return typeof hint === 'boolean' ? hint : true;
    case 'array': {
      if (Array.isArray(hint)) return hint;
      const count = Math.max(1, schema.minItems ?? 1);
      return Array.from({ length: count }, () => valueFor(schema.items ?? { type: 'string' }));
    }
    case 'null':
      return null;
    default:
      return objectFor(schema, hint);
  }
}

function objectFor(schema, hint) {
  const given = hint !== null && typeof hint === 'object' && !Array.isArray(hint) ? hint : {};
  const properties = schema.properties ?? {};
  const required = new Set(schema.required ?? []);
  const value = {};
  // As a model does: required properties and those the prompt asked for; optional ones stay out
  // (strict OpenAI schemas list every property as required, so they are all filled there).
  for (const [name, propertySchema] of Object.entries(properties)) {
    if (required.has(name) || name in given) value[name] = valueFor(propertySchema, given[name]);
  }
  for (const [name, given_] of Object.entries(given)) if (!(name in value)) value[name] = given_;
  return value;
}

/**
 * Checks `value` against `schema` the way the upstreams' strict modes do (types, required
 * properties, enums, no unknown properties when additionalProperties is false). Returns the first
 * problem, or null.
 */
export function schemaProblem(schema, value, path = '$') {
  if (schema === undefined || schema === null || typeof schema !== 'object') return null;
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) return `${path} is not one of the enum values`;
  for (const key of ['anyOf', 'oneOf']) {
    if (Array.isArray(schema[key])) return schema[key].some((option) => schemaProblem(option, value, path) === null) ? null : `${path} matches no ${key} option`;
  }
  const types = schema.type === undefined ? [] : [].concat(schema.type);
  if (types.length > 0 && !types.some((type) => hasType(value, type))) return `${path} must be ${types.join(' or ')}`;
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const name of schema.required ?? []) if (!(name in value)) return `${path}.${name} is required`;
    for (const [name, inner] of Object.entries(value)) {
      const propertySchema = schema.properties?.[name];
      if (propertySchema === undefined && schema.additionalProperties === false) return `${path}.${name} is not allowed`;
      const problem = schemaProblem(propertySchema, inner, `${path}.${name}`);
      if (problem !== null) return problem;
    }
  }
  if (Array.isArray(value) && schema.items !== undefined) {
    for (let i = 0; i < value.length; i++) {
      const problem = schemaProblem(schema.items, value[i], `${path}[${i}]`);
      if (problem !== null) return problem;
    }
  }
  return null;
}

function hasType(value, type) {
  switch (type) {
    case 'object':
      return value !== null && typeof value === 'object' && !Array.isArray(value);
    case 'array':
      return Array.isArray(value);
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    case 'null':
      return value === null;
    default:
      return typeof value === type;
  }
}

/**
 * The tool a prompt asks for: the first declared name the text mentions, with the JSON object that
 * follows "with" when the prompt gives one. Null when the prompt names no declared tool.
 */
export function requestedTool(text, toolNames) {
  const mentioned = toolNames
    .map((name) => ({ name, at: text.search(new RegExp(`(^|[^A-Za-z0-9_])${escapeRegExp(name)}($|[^A-Za-z0-9_])`)) }))
    .filter((entry) => entry.at >= 0)
    .sort((a, b) => a.at - b.at)[0];
  if (mentioned === undefined) return null;
  const after = text.slice(mentioned.at);
  const json = /\bwith (\{.*?\})(?=\s*(?:$|\.\s|\n))/s.exec(after);
  let hint = {};
  if (json !== null) {
    try {
      hint = JSON.parse(json[1]);
    } catch {
      hint = {};
    }
  }
  return { name: mentioned.name, hint };
}

function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
