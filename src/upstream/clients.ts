/** One client per provider, made at boot and shared by every request to it. */
import { providerHasCredentials } from '../routing/resolve';
import type { GatewayConfig } from '../config/types';
import { wireOf } from '../wire';
import type { UpstreamClient } from './types';

/** Clients for every provider in the config, by provider id. */
export function createUpstreamClients(config: GatewayConfig): Map<string, UpstreamClient> {
  const clients = new Map<string, UpstreamClient>();
  for (const provider of Object.values(config.providers)) {
    clients.set(provider.id, wireOf(provider).createClient(provider));
  }
  return clients;
}

/** Whether a provider can be called: it has the credentials its protocol needs. */
export function isConfigured(client: UpstreamClient): boolean {
  return providerHasCredentials(client.provider);
}
