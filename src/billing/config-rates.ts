/** A model's rates under a config snapshot, from a table computed once per snapshot and reused by every request under it. */
import type { GatewayConfig } from '../config/types';
import { FREE_RATES, rateTable, type ModelRates } from './service-levels';

const ratesByConfig = new WeakMap<GatewayConfig, ReadonlyMap<string, ModelRates>>();

export function ratesFor(config: GatewayConfig, modelId: string): ModelRates {
  let table = ratesByConfig.get(config);
  if (table === undefined) ratesByConfig.set(config, (table = rateTable(config)));
  return table.get(modelId) ?? FREE_RATES;
}
