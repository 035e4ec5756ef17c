/**
 * Every plugin Tollgate ships, listed once. No discovery, no registration side effects: a plugin
 * exists because it is named here, and `gateway.yaml` can only configure the ones named here.
 */
import type { PluginDefinition } from './kit';
import { authPlugin } from './auth';
import { billingPlugin } from './billing';
import { metricsPlugin } from './metrics';
import { rateLimitPlugin } from './rate-limit';
import { translatePlugin } from './translate';
import { upstreamPlugin } from './upstream';

export const PLUGINS: readonly PluginDefinition[] = [authPlugin, billingPlugin, metricsPlugin, rateLimitPlugin, translatePlugin, upstreamPlugin] as PluginDefinition[];
