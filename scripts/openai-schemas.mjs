#!/usr/bin/env node
/**
 * Writes test/fixtures/openai-schemas.json: the part of OpenAI's published OpenAPI document (MIT
 * licence) that the tests validate Tollgate's output against: the chat completion and Responses
 * objects, every Responses stream event, the error shapes, and every schema those reach through
 * `$ref`. Only the structure is kept (types, properties, required, enums, unions); descriptions,
 * titles and examples are left out. Usage:
 *   node scripts/openai-schemas.mjs PATH/TO/openai-openapi.yaml
 * Run again when OpenAI publishes a newer document, and let the tests say what changed.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const ROOTS = ['CreateChatCompletionResponse', 'CreateChatCompletionStreamResponse', 'Response', 'ResponseStreamEvent', 'ResponseError', 'Error'];
const PROSE = new Set(['description', 'title', 'example', 'examples', 'x-oaiMeta', 'x-oaiTypeLabel', 'x-oaiExpandable']);
const REF_PREFIX = '#/components/schemas/';

const source = process.argv[2];
if (source === undefined) {
  console.error('usage: node scripts/openai-schemas.mjs PATH/TO/openai-openapi.yaml');
  process.exit(2);
}
const document = parse(readFileSync(source, 'utf8'));
const all = document.components.schemas;

/** Keywords whose value maps names to schemas: its keys are names (a property may be called "title"). */
const NAMED = new Set(['properties', 'patternProperties', '$defs', 'definitions']);
/** Keywords whose value is data, copied as it is. */
const DATA = new Set(['enum', 'const', 'default']);

/** The schema without prose, collecting the names of the schemas it refers to. */
function structure(node, refs) {
  if (Array.isArray(node)) return node.map((item) => structure(item, refs));
  if (node === null || typeof node !== 'object') return node;
  const out = {};
  for (const [key, value] of Object.entries(node)) {
    if (PROSE.has(key)) continue;
    if (DATA.has(key)) {
      out[key] = value;
      continue;
    }
    if (key === '$ref' && typeof value === 'string' && value.startsWith(REF_PREFIX)) refs.push(value.slice(REF_PREFIX.length));
    out[key] = NAMED.has(key) && value !== null && typeof value === 'object' ? named(value, refs) : structure(value, refs);
  }
  return out;
}

function named(map, refs) {
  return Object.fromEntries(Object.entries(map).map(([name, schema]) => [name, structure(schema, refs)]));
}

const kept = {};
const queue = [...ROOTS];
while (queue.length > 0) {
  const name = queue.shift();
  if (name in kept) continue;
  if (!(name in all)) throw new Error(`${source} has no schema ${name}`);
  const refs = [];
  kept[name] = structure(all[name], refs);
  queue.push(...refs);
}

const sorted = Object.fromEntries(Object.keys(kept).sort().map((name) => [name, kept[name]]));
const target = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'test', 'fixtures', 'openai-schemas.json');
writeFileSync(target, `${JSON.stringify({ source: 'OpenAI OpenAPI document (MIT licence), structure only', schemas: sorted })}\n`);
console.log(`${Object.keys(sorted).length} schemas written to ${path.relative(process.cwd(), target)}`);
