/** One client per provider, made at boot and shared by every request to it. */
import { providerHasCredentials } from '../routing/resolve';
import type { GatewayConfig } from '../config/types';
import { EchoClient } from '../providers/echo';
import { HttpUpstreamClient } from './http-client';
import type { UpstreamClient } from './types';

/** Clients for every provider in the config, by provider id. */
export function createUpstreamClients(config: GatewayConfig): Map<string, UpstreamClient> {
  const clients = new Map<string, UpstreamClient>();
  for (const provider of Object.values(config.providers)) {
    clients.set(provider.id, provider.protocol === 'echo' ? new EchoClient(provider) : new HttpUpstreamClient(provider));
  }
  return clients;
}

/** Whether a provider can be called: HTTP providers need a key; the echo provider needs none. */
export function isConfigured(client: UpstreamClient): boolean {
  return providerHasCredentials(client.provider);
}
