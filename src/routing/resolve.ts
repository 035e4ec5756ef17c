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

/** Whether `provider` can be called at all: echo needs nothing, the others a key. */
export function providerHasCredentials(provider: ProviderConfig): boolean {
  return provider.protocol === 'echo' || provider.api_key !== '';
}

/** The first provider of `model` that lacks credentials, when none of its providers has any. */
export function unservableProvider(model: ModelConfig, config: GatewayConfig): ProviderConfig | null {
  const providers = model.routes.map((route) => config.providers[route.provider]);
  return providers.some(providerHasCredentials) ? null : providers[0];
}
