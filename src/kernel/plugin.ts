/** The contract every plugin in `plugins/` implements (docs/architecture.md#the-plugin-contract). */
import type { GatewayConfig, PluginConfigs, PluginName } from '../config/types';
import type { GatewayContext, Next } from './context';
import type { Stage, StageTimer } from './stages';

/**
 * What a plugin gets besides its own section of gateway.yaml, as far as the kernel knows it. The
 * gateway's kit (`plugins/kit.ts`) adds its store, logger and metrics: the kernel only passes the kit
 * on, so it never needs to name them.
 */
export interface BaseKit {
  /** The whole config at boot; a request reads its own snapshot from `ctx.state.config`. */
  readonly config: GatewayConfig;
  /** Where the chain times its stages (`PluginDefinition.stage`); absent: nothing is timed. */
  readonly stages?: StageTimer;
}

/**
 * What each plugin offers the rest of the gateway (the console, metrics, readiness), by plugin name.
 * The kernel names no plugin, so this stays empty here: `plugins/index.ts` fills it in from its list,
 * each entry being the service that plugin's definition declares. `Chain.service(name)` is typed by it.
 */
export interface PluginServices {}

/** The part of a set-up plugin the chain runs and closes. */
interface PluginLayer {
  /** The Koa onion: code before `next()` runs inbound, code after it outbound. */
  handle(ctx: GatewayContext, next: Next): Promise<void>;
  /**
   * Refuses (throws a `GatewayError`) what the request may not do, once the kernel's request stage has
   * read it and resolved its model; returns otherwise. Runs right after that stage, outermost plugin
   * first, before any link further in: a request refused here takes no rate-limit slot, no hold and no
   * upstream call. Synchronous, so a request that passes pays no extra turn of the event loop.
   */
  authorize?(ctx: GatewayContext): void;
  /** Called once on shutdown, innermost plugin first. */
  close?(): Promise<void>;
  /** For readiness: whether the back ends this plugin cannot serve without answer (billing: its balance book). */
  ready?(): Promise<boolean>;
  /**
   * For readiness: true while this plugin serves its requests with the store unreachable (billing,
   * whose charges wait in its outbox), so a store outage leaves the instance degraded, not unready.
   */
  coversStoreOutage?(): boolean;
}

/** A set-up plugin: its layer, and the service its definition declares (`undefined` when it offers none). */
export interface PluginInstance<Service = undefined> extends PluginLayer {
  readonly service: Service;
}

/** `N`: the plugin's name; `Service`: what it offers others through `Chain.service(N)` (nothing by default). */
export interface PluginDefinition<N extends PluginName = PluginName, Service = undefined, Kit extends BaseKit = BaseKit> {
  /** Equals the folder, the YAML key under `plugins:`, the schema's folder and the metric label. */
  readonly name: N;
  /**
   * Higher runs further out in the onion; ties break by name. Bands: metrics 10000, auth 2000, the
   * kernel's request stage 1800, rate-limit 1500, billing 1200, translate 800, upstream 500.
   */
  readonly priority: number;
  /** Plugins that must be enabled for this one to work; checked at boot. */
  readonly dependsOn?: readonly PluginName[];
  /** The stage its inbound time (from its start to its call of `next()`) counts as; untimed when absent. */
  readonly stage?: Stage;
  /** Receives config the kernel already validated against `plugins/<name>/schema.json`. */
  setup(config: PluginConfigs[N], kit: Kit): PluginInstance<Service> | Promise<PluginInstance<Service>>;
}

/** A definition whatever its name and service, as the chain holds them. */
export type AnyPluginDefinition<Kit extends BaseKit = BaseKit> = PluginDefinition<PluginName, unknown, Kit>;
