/**
 * The live state metrics and readiness read from the plugin chain serving now. A reload swaps the
 * chain whole, so nothing here holds on to a plugin's service: every read goes through `current()`.
 */
import type { Chain } from '../kernel/chain';
import type { LiveView } from './metrics';

/** Whether the rate-limit plugin of `chain` enforces local limits because Redis is unreachable. */
export function rateLimitDegraded(chain: Chain): boolean {
  return chain.service('rate-limit')?.degraded ?? false;
}

/** A view of whatever chain `current()` returns at the moment of each read. */
export function liveView(current: () => Chain): LiveView {
  return {
    breakerStates: () => current().service('upstream')?.breakerStates() ?? new Map(),
    rateLimitDegraded: () => rateLimitDegraded(current()),
  };
}
