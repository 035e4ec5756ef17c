/**
 * The order in which a request tries a model's routes: priority levels lowest first; within a level,
 * a weighted random order (a route with weight 3 leads three times as often as one with weight 1),
 * so traffic spreads as configured and a failure moves to the next route of the same level first.
 */
import type { GatewayConfig, ModelConfig } from '../config/types';
import type { Target } from './resolve';

/** A weighted shuffle: repeatedly draws one of the remaining targets in proportion to its weight. */
function weightedOrder(targets: Target[], random: () => number): Target[] {
  const left = [...targets];
  const ordered: Target[] = [];
  while (left.length > 0) {
    const total = left.reduce((sum, target) => sum + Math.max(target.route.weight, 0), 0);
    let pick = 0;
    if (total > 0) {
      let point = random() * total;
      while (pick < left.length - 1 && point >= left[pick].route.weight) point -= left[pick++].route.weight;
    }
    ordered.push(...left.splice(pick, 1));
  }
  return ordered;
}

/** Every route of `model`, in the order this request will try them. */
export function attemptOrder(model: ModelConfig, config: GatewayConfig, random: () => number = Math.random): Target[] {
  // Most models have one route: its order needs no levels, no sort and no draw.
  if (model.routes.length === 1) {
    const route = model.routes[0];
    return [{ route, provider: config.providers[route.provider] }];
  }
  const levels = new Map<number, Target[]>();
  for (const route of model.routes) {
    const level = levels.get(route.priority) ?? [];
    level.push({ route, provider: config.providers[route.provider] });
    levels.set(route.priority, level);
  }
  return [...levels.keys()].sort((a, b) => a - b).flatMap((priority) => weightedOrder(levels.get(priority)!, random));
}
