/**
 * The live state metrics and readiness read from the plugin chain serving now. A reload swaps the
 * chain whole, so nothing here holds on to an instance: every read goes through `current()`.
 */
import type { Chain } from '../kernel/chain';
import type { PluginInstance } from '../kernel/plugin';
import type { BreakerState } from '../upstream/breakers';
import type { LiveView } from './metrics';

interface BreakerSource {
  breakerStates(): ReadonlyMap<string, BreakerState>;
}

interface DegradedSource {
  readonly degraded: boolean;
}

function hasBreakers(instance: PluginInstance | undefined): instance is PluginInstance & BreakerSource {
  return instance !== undefined && typeof (instance as Partial<BreakerSource>).breakerStates === 'function';
}

function hasDegraded(instance: PluginInstance | undefined): instance is PluginInstance & DegradedSource {
  return instance !== undefined && typeof (instance as Partial<DegradedSource>).degraded === 'boolean';
}

/** Whether the rate-limit plugin of `chain` enforces local limits because Redis is unreachable. */
export function rateLimitDegraded(chain: Chain): boolean {
  const instance = chain.instance('rate-limit');
  return hasDegraded(instance) && instance.degraded;
}

/** A view of whatever chain `current()` returns at the moment of each read. */
export function liveView(current: () => Chain): LiveView {
  return {
    breakerStates() {
      const instance = current().instance('upstream');
      return hasBreakers(instance) ? instance.breakerStates() : new Map();
    },
    rateLimitDegraded: () => rateLimitDegraded(current()),
  };
}
