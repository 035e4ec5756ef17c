/**
 * `tollgate models check`: each configured model whose limits or standard price differ from the model
 * catalog's for the model its route serves, with the catalog's date, so an operator sees which
 * figures went stale, and a warning for each rate sold below what a route costs. Neither is an error:
 * prices are the operator's to set.
 */
import { catalogModel, priceForKind, type CatalogModel } from '../catalog/catalog';
import { describeSource, PRICES_SOURCE } from '../catalog/sources';
import { routeCost } from '../config/route-cost';
import type { GatewayConfig, ModelConfig, RateCard } from '../config/types';

const RATE_FIELDS = ['input', 'output', 'cache_write', 'cache_write_1h', 'cache_hit', 'image_input', 'image_output'] as const;

/** One line per figure that differs: `model (route): field configured X, catalog Y (date)`. */
function catalogDifferences(config: Pick<GatewayConfig, 'providers' | 'models'>): string[] {
  const lines: string[] = [];
  for (const model of Object.values(config.models)) {
    for (const route of model.routes) {
      const provider = config.providers[route.provider];
      const facts = provider === undefined ? null : catalogModel(provider, route.upstream_model);
      if (facts === null) continue;
      const at = `${model.id} (${route.provider} ${route.upstream_model} = catalog ${facts.provider} ${facts.id})`;
      for (const difference of differences(model, facts)) lines.push(`${at}: ${difference}`);
    }
  }
  return lines;
}

function differences(model: ModelConfig, facts: CatalogModel): string[] {
  const found: string[] = [];
  if (facts.contextWindow !== null && model.context_window !== facts.contextWindow) found.push(`context_window ${model.context_window ?? 'unset'}, catalog ${facts.contextWindow}`);
  if (facts.maxOutputTokens !== null && model.max_output_tokens !== facts.maxOutputTokens) found.push(`max_output_tokens ${model.max_output_tokens}, catalog ${facts.maxOutputTokens}`);
  if (model.price === undefined || facts.price === null) return found;
  const listed = priceForKind(facts.price, model.kind) as Partial<Record<keyof RateCard, number>>;
  for (const field of RATE_FIELDS) {
    const catalog = listed[field];
    if (catalog !== undefined && model.price[field] !== catalog) found.push(`price.${field} ${model.price[field]}, catalog ${catalog} (list price of ${facts.priceDate})`);
  }
  return found;
}

/**
 * One warning per standard rate a model is sold at below what a route costs the operator (the route's
 * `cost`, else the catalog's list price): each request it serves there loses money on that kind.
 */
function belowCost(config: Pick<GatewayConfig, 'providers' | 'models'>): string[] {
  const lines: string[] = [];
  for (const model of Object.values(config.models)) {
    for (const route of model.routes) {
      const cost = routeCost(route, config.providers[route.provider], model);
      if (cost === null) continue;
      const price = model.price;
      const below = RATE_FIELDS.filter((field) => (price === undefined ? 0 : price[field]) < cost[field]).map(
        (field) => `${field} ${price === undefined ? 'free' : price[field]} < cost ${cost[field]}`,
      );
      const source = route.cost === undefined ? 'catalog list price' : 'its cost';
      if (below.length > 0) lines.push(`warning: ${model.id} is sold below cost on route ${route.provider} ${route.upstream_model} (${source}): ${below.join(', ')}`);
    }
  }
  return lines;
}

export function runModelsCheck(config: GatewayConfig, out: (line: string) => void): number {
  const lines = catalogDifferences(config);
  out(`catalog: ${describeSource(PRICES_SOURCE)}`);
  if (lines.length === 0) out('every configured figure the catalog has matches it');
  for (const line of lines) out(line);
  for (const line of belowCost(config)) out(line);
  return 0;
}
