/**
 * What a route costs the operator: the cost gateway.yaml states for it, else the model catalog's list
 * price for the model that provider serves (`src/catalog`), else unknown. Billing records each charge's
 * usage at it; `tollgate models check` compares prices with it.
 */
import { catalogModel, priceForKind } from '../catalog/catalog';
import { derivePrice } from './derive';
import type { ModelConfig, ModelPrice, ProviderConfig, RouteTarget } from './types';

export function routeCost(route: RouteTarget, provider: ProviderConfig | undefined, model: Pick<ModelConfig, 'family' | 'kind'>): ModelPrice | null {
  if (route.cost !== undefined) return route.cost;
  if (provider === undefined) return null;
  const price = catalogModel(provider, route.upstream_model)?.price ?? null;
  return price === null ? null : derivePrice(priceForKind(price, model.kind), model.family);
}

