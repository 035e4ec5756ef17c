/**
 * What every Tollgate plugin is given at setup, and the plugin contract bound to it. The kernel's
 * contract (`src/kernel/plugin.ts`) is generic over the kit, so the kernel never names the gateway's
 * services; they are named here, one level up.
 */
import type { Logger } from 'pino';
import type { PluginName } from '../src/config/types';
import type { BaseKit, AnyPluginDefinition as KernelAnyPluginDefinition, PluginDefinition as KernelPluginDefinition } from '../src/kernel/plugin';
import type { SettledCharges } from '../src/billing/settled';
import type { GatewayMetrics } from '../src/metrics/metrics';
import type { Store } from '../src/store/store';

export interface PluginKit extends BaseKit {
  readonly store: Store;
  readonly logger: Logger;
  /** The gateway's metrics: created once per gateway, so counters survive a reload's new chain. */
  readonly metrics: GatewayMetrics;
  /** Told of each charge once it reached the live balances (auto-recharge listens); absent in tests that need none. */
  readonly settled?: SettledCharges;
}

/** A Tollgate plugin: the kernel's contract, set up with the gateway's kit; `Service` is what it offers others. */
export type PluginDefinition<N extends PluginName = PluginName, Service = undefined> = KernelPluginDefinition<N, Service, PluginKit>;

/** A Tollgate plugin whatever its name and service, as the list holds them. */
export type AnyPluginDefinition = KernelAnyPluginDefinition<PluginKit>;
