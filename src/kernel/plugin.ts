/** The contract every plugin in `plugins/` implements (ARCHITECTURE.md, "The plugin contract"). */
import type { GatewayConfig, PluginConfigs, PluginName } from '../config/types';
import type { GatewayContext, Next } from './context';

/**
 * What a plugin gets besides its own section of gateway.yaml, as far as the kernel knows it. The
 * gateway's kit (`plugins/kit.ts`) adds its store, logger and metrics: the kernel only passes the kit
 * on, so it never needs to name them.
 */
export interface BaseKit {
  /** The whole config at boot; a request reads its own snapshot from `ctx.state.config`. */
  readonly config: GatewayConfig;
}

export interface PluginInstance {
  /** The Koa onion: code before `next()` runs inbound, code after it outbound. */
  handle(ctx: GatewayContext, next: Next): Promise<void>;
  /** Called once on shutdown, innermost plugin first. */
  close?(): Promise<void>;
  /** For readiness: whether the back ends this plugin cannot serve without answer (billing: its balance book). */
  ready?(): Promise<boolean>;
}

export interface PluginDefinition<N extends PluginName = PluginName, Kit extends BaseKit = BaseKit> {
  /** Equals the folder, the YAML key under `plugins:`, the schema file name and the metric label. */
  readonly name: N;
  /** Higher runs further out in the onion; ties break by name. Bands live in `kernel/chain.ts`. */
  readonly priority: number;
  /** Plugins that must be enabled for this one to work; checked at boot. */
  readonly dependsOn?: readonly PluginName[];
  /** Receives config the kernel already validated against `schemas/plugins/<name>.schema.json`. */
  setup(config: PluginConfigs[N], kit: Kit): PluginInstance | Promise<PluginInstance>;
}
