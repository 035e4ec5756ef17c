/**
 * Every plugin Tollgate ships, listed once. No discovery, no registration side effects: a plugin
 * exists because it is named here, and `gateway.yaml` can only configure the ones named here.
 */
import type { PluginName } from '../src/config/types';
import type { AnyPluginDefinition, PluginDefinition } from './kit';
import { authPlugin } from './auth';
import { billingPlugin } from './billing';
import { metricsPlugin } from './metrics';
import { rateLimitPlugin } from './rate-limit';
import { translatePlugin } from './translate';
import { upstreamPlugin } from './upstream';

/**
 * Each plugin by the name gateway.yaml configures it under. The compiler holds this to exactly the
 * plugin sections of the schema (`PluginName`), each definition under its own name.
 */
const PLUGINS_BY_NAME = {
  auth: authPlugin,
  billing: billingPlugin,
  metrics: metricsPlugin,
  'rate-limit': rateLimitPlugin,
  translate: translatePlugin,
  upstream: upstreamPlugin,
} as const satisfies { readonly [N in PluginName]: PluginDefinition<N, unknown> };

export const PLUGINS: readonly AnyPluginDefinition[] = Object.values(PLUGINS_BY_NAME);

/** What each plugin's instance carries as its `service`, read from its definition's type. */
type ServiceOf<D extends AnyPluginDefinition> = Awaited<ReturnType<D['setup']>>['service'];

declare module '../src/kernel/plugin' {
  /** Filled in from the list above: the kernel knows no plugin, the list knows them all. */
  interface PluginServices extends ServicesByName {}
}

type ServicesByName = { readonly [N in PluginName]: ServiceOf<(typeof PLUGINS_BY_NAME)[N]> };
