/**
 * Where Stripe sends the browser back after a checkout. `server.public_url` when it is set; without it,
 * only what gateway.yaml names: `server.host` (a wildcard listen address, which names no host, as the
 * loopback address) on the port the request came in on (the socket's, not a header's). Never a host
 * the client sent (Host, or X-Forwarded-Host under `trust_proxy`): a forged one would have Stripe send
 * the customer, and the order's id, to a site of the sender's choosing.
 */
import type { GatewayConfig } from '../config/types';

/** Listen addresses that accept every interface and so name no host to come back to. */
const WILDCARDS = new Set(['', '0.0.0.0', '::', '[::]']);

export function returnBase(server: Pick<GatewayConfig['server'], 'public_url' | 'host'>, localPort: number): string {
  if (server.public_url !== '') return server.public_url.replace(/\/$/, '');
  const host = WILDCARDS.has(server.host) ? '127.0.0.1' : server.host;
  // An IPv6 literal is bracketed in a URL.
  const named = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `http://${named}:${localPort}`;
}
