/**
 * Where a request for a model may go. Targets come in the model's priority order; within a level the
 * order written in gateway.yaml stands (weighted choice and failover build on this list).
 */
import type { GatewayConfig, ModelConfig, ProviderConfig, RouteTarget } from '../config/types';
import type { Endpoint } from '../protocols/types';
import { wireOf, speaksNatively as wireSpeaksNatively } from '../wire';

export interface Target {
  readonly route: RouteTarget;
  readonly provider: ProviderConfig;
}

/** Whether `provider` can answer `endpoint` without translation (its protocol's native endpoints). */
export function speaksNatively(provider: ProviderConfig, endpoint: Endpoint): boolean {
  return wireSpeaksNatively(provider, endpoint);
}

/** Whether `provider` can be called at all: it has what its protocol needs (a key, a credential source). */
export function providerHasCredentials(provider: ProviderConfig): boolean {
  return wireOf(provider).hasCredentials(provider);
}

/** The first provider of `model` that lacks credentials, when none of its providers has any. */
export function unservableProvider(model: ModelConfig, config: GatewayConfig): ProviderConfig | null {
  const providers = model.routes.map((route) => config.providers[route.provider]);
  return providers.some(providerHasCredentials) ? null : providers[0];
}
