/**
 * Which headers cross the gateway, in each direction. Both lists are allow-lists: a header nobody
 * thought of stays behind, so a client's key, cookie or alternate auth header can never reach a
 * provider (docs/faults.md#a4), and a provider's cookies never reach a client.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderConfig } from '../config/types';
import { wireOf } from '../wire';

/** Client headers forwarded to every provider. */
const FORWARDED = new Set(['accept', 'user-agent']);

/**
 * Headers that choose among the provider's own organisations, workspaces or projects: the account a
 * request is billed to upstream is the operator's choice (a provider's `headers`), never a client's,
 * even where the protocol's prefixes would let them through.
 */
const PROVIDER_ACCOUNT_HEADERS: ReadonlySet<string> = new Set(['anthropic-organization-id', 'anthropic-workspace-id', 'openai-organization', 'openai-project']);

/** Upstream response headers relayed to the client. */
const RELAYED = new Set(['content-type', 'retry-after', 'retry-after-ms', 'x-should-retry', 'request-id']);

/**
 * The headers of one upstream request: the client's allowed ones (its protocol's prefixes,
 * docs/decisions.md#d11-query-strings-and-forwarded-headers) and the provider's extras. The credential is
 * added by the provider's client, last.
 */
export function upstreamRequestHeaders(
  client: IncomingHttpHeaders,
  provider: ProviderConfig,
  requestId: string,
): Record<string, string> {
  const headers: Record<string, string> = {};
  const prefixes = wireOf(provider).forwardedHeaderPrefixes;
  for (const [name, value] of Object.entries(client)) {
    if (value === undefined || PROVIDER_ACCOUNT_HEADERS.has(name)) continue;
    if (FORWARDED.has(name) || prefixes.some((prefix) => name.startsWith(prefix))) {
      headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
  }
  Object.assign(headers, provider.headers, wireOf(provider).protocolHeaders(provider, true));
  headers['content-type'] = 'application/json';
  // The relay taps the bytes for usage, so they must arrive uncompressed.
  headers['accept-encoding'] = 'identity';
  headers['x-request-id'] = requestId;
  return headers;
}

/**
 * The headers of a translated request: the client spoke another protocol, so none of its headers
 * mean anything upstream; the protocol adds its own (the Anthropic version,
 * docs/decisions.md#d14-a-translated-request-names-its-own-version).
 */
export function translatedRequestHeaders(provider: ProviderConfig, requestId: string): Record<string, string> {
  const headers: Record<string, string> = { ...provider.headers };
  headers['content-type'] = 'application/json';
  headers['accept-encoding'] = 'identity';
  headers['x-request-id'] = requestId;
  Object.assign(headers, wireOf(provider).protocolHeaders(provider, false));
  return headers;
}

/** The upstream response headers a client may see; the upstream's own request id is renamed so ours stays unique. */
export function relayedResponseHeaders(upstream: Readonly<Record<string, string | string[] | undefined>>): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of RELAYED) {
    const value = upstream[name];
    if (typeof value === 'string') headers[name] = value;
  }
  const upstreamId = upstream['x-request-id'];
  if (typeof upstreamId === 'string') headers['x-upstream-request-id'] = upstreamId;
  return headers;
}

/**
 * The provider's own id for a response: OpenAI sends `x-request-id`, Anthropic `request-id`, AWS
 * `x-amzn-requestid`. Logged
 * next to ours so an operator can quote it to the provider; bounded, since it comes from outside.
 */
export function upstreamRequestIdOf(upstream: Readonly<Record<string, string | string[] | undefined>>): string | null {
  const value = upstream['x-request-id'] ?? upstream['request-id'] ?? upstream['x-amzn-requestid'];
  return typeof value === 'string' && value !== '' ? value.slice(0, 200) : null;
}
