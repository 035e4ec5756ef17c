/** A model's rates under a config snapshot, from a table computed once per snapshot and reused by every request under it. */
import type { GatewayConfig } from '../config/types';
import { costTable, FREE_RATES, rateTable, type ModelRates } from './service-levels';

const ratesByConfig = new WeakMap<GatewayConfig, ReadonlyMap<string, ModelRates>>();

export function ratesFor(config: GatewayConfig, modelId: string): ModelRates {
  let table = ratesByConfig.get(config);
  if (table === undefined) ratesByConfig.set(config, (table = rateTable(config)));
  return table.get(modelId) ?? FREE_RATES;
}

/** Route cost tables per config snapshot, as the rate tables are. */
const costsByConfig = new WeakMap<GatewayConfig, ReadonlyMap<string, ReadonlyMap<string, ModelRates>>>();
const NO_COSTS: ReadonlyMap<string, ModelRates> = new Map();

/** What each of a model's routes costs the operator, by `routeKey`; a route of unknown cost is absent. */
export function costsFor(config: GatewayConfig, modelId: string): ReadonlyMap<string, ModelRates> {
  let table = costsByConfig.get(config);
  if (table === undefined) costsByConfig.set(config, (table = costTable(config)));
  return table.get(modelId) ?? NO_COSTS;
}
