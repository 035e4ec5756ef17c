/**
 * `tollgate models add PROVIDER MODEL`: writes a gateway.yaml entry for a catalog model, served by the
 * file's provider PROVIDER: family, route, limits and price, with the catalog's source and date as
 * comments. The file is changed only where the entry goes: the rest, comments and layout included,
 * stays byte for byte, and the result must still be a valid config before it is written.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { isMap, isScalar, parseDocument, Document, type YAMLMap } from 'yaml';
import { divideHalfUp, formatUnits, NANO_PER_UNIT, unitsToNano } from '../billing/money';
import { catalogModel, type CatalogModel, type CatalogPrice } from '../catalog/catalog';
import { describeSource, LIMITS_SOURCE, PRICES_SOURCE } from '../catalog/sources';
import { parseConfig } from '../config/load';
import { UsageError } from './args';

export interface ModelsAddOptions {
  readonly file: string;
  readonly provider: string;
  readonly model: string;
  /** The public id; the catalog model's own id when absent. */
  readonly as?: string;
  /** Sell at the catalog's list price times this (a decimal: "1.2"); absent: at the list price. */
  readonly markup?: string;
  readonly contextWindow?: number;
  readonly maxOutputTokens?: number;
  readonly env: NodeJS.ProcessEnv;
}

/** Each protocol's model family: the Anthropic clouds serve Anthropic's models. */
const FAMILY_OF: Readonly<Record<string, 'openai' | 'anthropic'>> = { openai: 'openai', anthropic: 'anthropic', bedrock: 'anthropic', vertex: 'anthropic' };

export function runModelsAdd(options: ModelsAddOptions, out: (line: string) => void): number {
  const text = readFileSync(options.file, 'utf8');
  const doc = parseDocument(text);
  const provider = doc.getIn(['providers', options.provider], true);
  if (!isMap(provider)) throw new Error(`${options.file} has no provider "${options.provider}"`);
  const protocol = String(provider.get('protocol'));
  const family = FAMILY_OF[protocol];
  if (family === undefined) throw new Error(`provider "${options.provider}" speaks ${protocol}, which the model catalog does not list`);
  const baseUrl = provider.get('base_url');
  const facts = catalogModel({ protocol, base_url: typeof baseUrl === 'string' ? baseUrl : undefined }, options.model);
  if (facts === null) throw new Error(`the model catalog has no "${options.model}" for ${protocol} (try: tollgate models search ${options.model})`);
  if (facts.price === null) throw new Error(`the model catalog lists "${options.model}" without a token price`);
  const id = options.as ?? options.model;
  if (doc.hasIn(['models', id])) throw new Error(`${options.file} already has a model "${id}"`);

  const contextWindow = options.contextWindow ?? facts.contextWindow;
  const maxOutputTokens = options.maxOutputTokens ?? facts.maxOutputTokens;
  if (contextWindow === null) throw new UsageError(`the model catalog has no context window for "${options.model}": give --context-window N`);
  if (maxOutputTokens === null) throw new UsageError(`the model catalog has no output limit for "${options.model}": give --max-output-tokens N`);

  const entry = {
    family,
    routes: [{ provider: options.provider, ...(id !== options.model && { upstream_model: options.model }) }],
    price: options.markup === undefined ? facts.price : marked(facts.price, options.markup),
    max_output_tokens: maxOutputTokens,
    context_window: contextWindow,
  };
  const comments = sourceComments(facts, options);
  const updated = withEntry(text, doc, id, entry, comments);
  // Refuses to write a file the server would refuse to start with.
  parseConfig(updated, options.file, options.env);
  writeFileSync(options.file, updated);
  out(`added model "${id}" to ${options.file}: ${facts.provider} ${facts.id}, priced ${options.markup === undefined ? 'at the catalog list price' : `at ${options.markup} x the catalog list price`}`);
  return 0;
}

/** Where the entry's facts came from, dated, as the comment lines above it. */
function sourceComments(facts: CatalogModel, options: ModelsAddOptions): string[] {
  const limits = [
    options.contextWindow === undefined ? `context_window from ${describeSource(PRICES_SOURCE)}` : 'context_window given to models add',
    options.maxOutputTokens === undefined ? `max_output_tokens from ${describeSource(LIMITS_SOURCE)}` : 'max_output_tokens given to models add',
  ];
  const price = options.markup === undefined ? 'the list price' : `${options.markup} x the list price`;
  return [
    `${facts.name ?? facts.id}: ${facts.provider} ${facts.id} in ${describeSource(PRICES_SOURCE)}, list price of ${facts.priceDate}.`,
    `Price: ${price}; the route's cost defaults to the list price. ${limits.join('; ')}.`,
  ];
}

/** Every rate of `price` times `markup`, exact to the nano-unit (half up), in gateway.yaml's decimals. */
function marked(price: CatalogPrice, markup: string): CatalogPrice {
  let factor: bigint;
  try {
    factor = unitsToNano(markup);
  } catch {
    throw new UsageError(`--markup "${markup}" is not a decimal number`);
  }
  if (factor <= 0n) throw new UsageError('--markup must be above 0');
  const scale = (value: unknown): unknown => {
    if (typeof value === 'number') return Number(formatUnits(divideHalfUp(unitsToNano(value) * factor, NANO_PER_UNIT)));
    if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, key === 'above_input_tokens' ? inner : scale(inner)]));
    return value;
  };
  return scale(price) as CatalogPrice;
}

/**
 * `text` with the entry added at the end of its block `models` mapping, indented as that mapping's
 * keys are; any other shape of `models` is rewritten through the document, which keeps its comments.
 */
function withEntry(text: string, doc: Document, id: string, entry: object, comments: readonly string[]): string {
  const models = doc.get('models', true);
  const last = isMap(models) && !models.flow ? models.items.at(-1) : undefined;
  if (last === undefined || !isScalar(last.key) || last.key.range == null) {
    const node = doc.createNode(entry) as YAMLMap;
    flowPrice(node);
    node.commentBefore = comments.map((line) => ` ${line}`).join('\n');
    doc.setIn(['models', id], node);
    return doc.toString({ lineWidth: 0 });
  }
  const indent = ' '.repeat(last.key.range[0] - text.lastIndexOf('\n', last.key.range[0] - 1) - 1);
  const rendered = new Document({ [id]: entry });
  flowPrice(rendered.get(id, true) as YAMLMap);
  const block = [...comments.map((line) => `# ${line}`), ...rendered.toString({ lineWidth: 0 }).trimEnd().split('\n')].map((line) => `${indent}${line}`).join('\n');
  const end = (models as YAMLMap).range![1];
  const at = text.slice(0, end).trimEnd().length;
  return `${text.slice(0, at)}\n\n${block}\n${text.slice(at).replace(/^[^\S\n]*\n?/, '')}`;
}

/** A price reads best on one line, as the shipped file writes them. */
function flowPrice(model: YAMLMap): void {
  const price = model.get('price', true);
  if (isMap(price)) price.flow = true;
}
