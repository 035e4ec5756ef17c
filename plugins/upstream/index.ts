/**
 * The innermost plugin: sends the request to the model's routes (failover, circuit breakers, the
 * commit point: `src/upstream/dispatch.ts`) and relays the answer. This file only wires the pieces
 * that live as long as the plugin: one client per provider and one breaker per provider.
 */
import { ResponseOwnership } from '../../src/upstream/response-ownership';
import type { Logger } from 'pino';
import type { AffinityConfig, GatewayConfig, UpstreamPluginConfig } from '../../src/config/types';
import type { Exchange, GatewayContext } from '../../src/kernel/context';
import type { StageObserver } from '../../src/kernel/stages';
import { need } from '../../src/kernel/need';
import { GatewayError } from '../../src/kernel/errors';
import type { PluginInstance } from '../../src/kernel/plugin';
import type { PluginDefinition } from '../kit';
import type { GatewayMetrics } from '../../src/metrics/metrics';
import { LocalAffinityStore, RedisAffinityStore, type AffinityStore } from '../../src/routing/affinity';
import type { Target } from '../../src/routing/resolve';
import { closeRedis, connectRedis, redisConfigured } from '../../src/shared-state/redis';
import type { RouteTranslator } from '../../src/upstream/attempt';
import { ProviderBreakers, type BreakerState, type ProviderHealth } from '../../src/upstream/breakers';
import { createUpstreamClients, isConfigured } from '../../src/upstream/clients';
import { dispatch } from '../../src/upstream/dispatch';
import { RetryBudget } from '../../src/upstream/retry-budget';
import { routeTranslator } from '../../src/upstream/route-translator';
import { wireOf } from '../../src/wire';

/** What the upstream plugin offers others: its providers' breakers, for metrics and the console. */
export interface UpstreamService {
  /** The breaker state of every configured provider (closed for one not yet called). */
  breakerStates(): ReadonlyMap<string, BreakerState>;
  /** Breaker state and recent attempts of every configured provider, for the console. */
  providerHealth(): ReadonlyMap<string, ProviderHealth>;
}

/** How the request crosses to `target`; without the translate plugin, only a route of the client's protocol serves. */
function routeOf(ctx: GatewayContext, target: Target): RouteTranslator {
  const route = ctx.state.translation?.for(target) ?? routeTranslator(ctx.state.endpoint, target.provider, false);
  if (route === null) {
    throw new GatewayError(
      'TOLLGATE_ERR_UNSUPPORTED_PROTOCOL',
      `The model '${need(ctx, 'request').model.id}' is served over the ${wireOf(target.provider).displayName} protocol and is not available on ${ctx.state.endpoint.path}.`,
      { param: 'model' },
    );
  }
  return route;
}

/**
 * `route`, counting the client headers each of its native requests leaves behind, and timing each
 * attempt's upstream request as it is built (the translation stage).
 */
function countingDroppedHeaders(route: RouteTranslator, metrics: GatewayMetrics, translation: StageObserver | undefined): RouteTranslator {
  return {
    begin(ctx, target) {
      const startedAt = translation === undefined ? 0 : performance.now();
      const leg = route.begin(ctx, target);
      translation?.observe((performance.now() - startedAt) / 1000);
      if (leg.droppedHeaders !== undefined && leg.droppedHeaders.length > 0) metrics.recordDroppedHeaders(target.provider.protocol, leg.droppedHeaders);
      return leg;
    },
  };
}

/** The time of every upstream attempt of the exchange, in ms. */
function attemptsTime(exchange: Exchange | undefined): number {
  let total = 0;
  for (const attempt of exchange?.attemptLog ?? []) total += attempt.durationMs;
  return total;
}

/** The session table: in process, or shared through Redis when the gateway has one. */
async function openAffinity(config: AffinityConfig, gateway: GatewayConfig, logger: Logger): Promise<{ store: AffinityStore; close(): Promise<void> }> {
  const local = new LocalAffinityStore(config.max_entries, config.ttl_ms);
  if (!config.enabled || !redisConfigured(gateway.redis)) return { store: local, close: async () => undefined };
  const redis = await connectRedis(gateway.redis, { connectionName: 'tollgate-affinity' });
  const store = new RedisAffinityStore(redis, `${gateway.redis.key_prefix}affinity:`, config.ttl_ms, local, logger);
  return { store, close: () => closeRedis(redis) };
}

export const upstreamPlugin: PluginDefinition<'upstream', UpstreamService> = {
  name: 'upstream',
  // Innermost: every plugin has had its say before a request leaves for a provider.
  priority: 500,
  async setup(config: UpstreamPluginConfig, kit): Promise<PluginInstance<UpstreamService>> {
    const clients = createUpstreamClients(kit.config);
    for (const client of clients.values()) {
      if (!isConfigured(client)) {
        kit.logger.warn(
          { provider: client.provider.id },
          `provider "${client.provider.id}" has no api_key: its models answer 503 until one is set`,
        );
      }
    }
    const breakers = new ProviderBreakers(config.breaker, kit.logger);
    const retryBudget = new RetryBudget(config.retry_budget.percent, config.retry_budget.min_retries);
    const affinity = await openAffinity(config.affinity, kit.config, kit.logger);
    const deps = {
      clients,
      breakers,
      retryBudget,
      failover: config.failover,
      routeFor: (ctx: GatewayContext, target: Target) => countingDroppedHeaders(routeOf(ctx, target), kit.metrics, translation),
      affinity: { config: config.affinity, store: affinity.store },
    };
    const ownership = new ResponseOwnership(kit.store.relayedResponses, kit.logger);
    const translation = kit.stages?.observer('translation');
    const route = kit.stages?.observer('route');

    return {
      service: {
        breakerStates: () => new Map([...clients.keys()].map((provider) => [provider, breakers.state(provider)])),
        providerHealth: () => new Map([...clients.keys()].map((provider) => [provider, breakers.health(provider)])),
      },
      handle: async function upstreamPlugin(ctx: GatewayContext) {
        const startedAt = route === undefined ? 0 : performance.now();
        // Before any provider is called: a native route would hand another account's response id to OpenAI.
        await ownership.check(ctx);
        await dispatch(ctx, deps);
        ownership.recordAfter(ctx);
        // The route stage: this plugin's time outside its attempts (each attempt is the provider's time).
        if (route !== undefined) route.observe(Math.max(0, performance.now() - startedAt - attemptsTime(ctx.state.exchange)) / 1000);
      },
      async close() {
        breakers.shutdown();
        await Promise.all([...clients.values()].map((client) => client.close()));
        await affinity.close();
      },
    };
  },
};
