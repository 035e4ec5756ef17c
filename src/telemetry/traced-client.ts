/**
 * Adds one attempt's trace context (`traceparent`, `tracestate`) to what an upstream client sends.
 * Done around the client rather than in the header allow-list, so native and translated requests
 * both carry it and the allow-list keeps passing nothing else of the client's.
 */
import type { UpstreamClient, UpstreamRequest } from '../upstream/types';

export function withTraceHeaders(client: UpstreamClient, headers: Readonly<Record<string, string>>): UpstreamClient {
  if (Object.keys(headers).length === 0) return client;
  // Inherits every other member of the client; only `send` differs.
  const traced = Object.create(client) as UpstreamClient;
  traced.send = (request: UpstreamRequest) => client.send({ ...request, headers: { ...request.headers, ...headers } });
  return traced;
}
