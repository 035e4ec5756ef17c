/**
 * A model whose gateway.yaml entry leaves out `context_window` or `max_output_tokens` takes the
 * catalog's figure for the model its first route names (`src/catalog`), so an operator need not copy
 * limits from provider pages. What was taken is listed on the config (`catalog_limits`) for the
 * server to say once at start; a limit that neither the file nor the catalog has is still the
 * cross-check's error, naming the model's line.
 */
import { catalogModel } from '../catalog/catalog';
import { describeSource, LIMITS_SOURCE, PRICES_SOURCE } from '../catalog/sources';
import type { YamlLocator } from './locate';
import type { CatalogLimit, GatewayConfig, ModelConfig } from './types';

const LIMIT_FIELDS = ['context_window', 'max_output_tokens'] as const;

/** `config` with each limit the file leaves out filled in from the catalog where it has one. */
export function withCatalogLimits<C extends Pick<GatewayConfig, 'providers' | 'models'>>(config: C, locator: YamlLocator): C & { readonly catalog_limits?: readonly CatalogLimit[] } {
  const taken: CatalogLimit[] = [];
  const models: Record<string, ModelConfig> = {};
  for (const [id, model] of Object.entries(config.models)) {
    const missing = LIMIT_FIELDS.filter((field) => !locator.has(['models', id, field]));
    models[id] = missing.length === 0 ? model : fillLimits(model, missing, config, taken);
  }
  return taken.length === 0 ? config : { ...config, models, catalog_limits: taken };
}

function fillLimits(model: ModelConfig, missing: readonly (typeof LIMIT_FIELDS)[number][], config: Pick<GatewayConfig, 'providers'>, taken: CatalogLimit[]): ModelConfig {
  const route = model.routes.find((candidate) => config.providers[candidate.provider] !== undefined);
  const provider = route === undefined ? undefined : config.providers[route.provider];
  if (route === undefined || provider === undefined) return model;
  const facts = catalogModel(provider, route.upstream_model);
  if (facts === null) return model;
  const filled: Record<string, number> = {};
  for (const field of missing) {
    const value = field === 'context_window' ? facts.contextWindow : facts.maxOutputTokens;
    if (value === null) continue;
    filled[field] = value;
    const source = field === 'context_window' && facts.price !== null ? PRICES_SOURCE : LIMITS_SOURCE;
    taken.push({ model: model.id, field, value, source: `${describeSource(source)}: ${facts.provider} ${facts.id}` });
  }
  return { ...model, ...filled };
}
