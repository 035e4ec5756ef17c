/**
 * Where a request for a model may go. Targets come in the model's priority order; within a level the
 * order written in gateway.yaml stands (weighted choice and failover build on this list).
 */
import type { GatewayConfig, ModelConfig, ProviderConfig, RouteTarget } from '../config/types';
import type { Endpoint } from '../protocols/types';

export interface Target {
  readonly route: RouteTarget;
  readonly provider: ProviderConfig;
}

/** The model's targets, lowest priority number first. */
export function targetsFor(model: ModelConfig, config: GatewayConfig): Target[] {
  return [...model.routes]
    .sort((a, b) => a.priority - b.priority)
    .map((route) => ({ route, provider: config.providers[route.provider] }));
}

/** Whether `provider` can answer `endpoint` without translation. The echo provider speaks every protocol. */
export function speaksNatively(provider: ProviderConfig, endpoint: Endpoint): boolean {
  return provider.protocol === 'echo' || provider.protocol === endpoint.family;
}

/** The path under the provider's base URL for a native request on `endpoint`. */
export function upstreamPath(endpoint: Endpoint): string {
  switch (endpoint.id) {
    case 'chat':
      return '/chat/completions';
    case 'responses':
      return '/responses';
    case 'messages':
      return '/v1/messages';
    case 'count_tokens':
      return '/v1/messages/count_tokens';
  }
}
