/**
 * Which headers cross the gateway, in each direction. Both are allow-lists: a header nobody thought
 * of stays behind, so a client's key, cookie or alternate auth header can never reach a provider
 * (docs/faults.md#a4), and a provider's cookies never reach a client. The client headers each
 * protocol forwards are one table, with the reason for each (`src/wire/forwarded-headers.ts`).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { ProviderConfig } from '../config/types';
import { wireOf } from '../wire';
import { droppedHeaderLabel, FORWARDED_HEADERS } from '../wire/forwarded-headers';

/** Upstream response headers relayed to the client. */
const RELAYED = new Set(['content-type', 'retry-after', 'retry-after-ms', 'x-should-retry', 'request-id']);

/** One native request's headers, and the `header` labels of the client headers left behind. */
interface UpstreamRequestHeaders {
  readonly headers: Record<string, string>;
  readonly dropped: readonly string[];
}

/** The values of a comma-separated header that `allowed` lists (case-insensitively), joined again. */
function allowedValues(value: string, allowed: readonly string[]): string {
  return value
    .split(',')
    .map((part) => part.trim())
    .filter((part) => allowed.includes(part.toLowerCase()))
    .join(', ');
}

/**
 * The headers of one upstream request: the client's that its protocol's table forwards
 * (docs/decisions.md#d17-forwarded-headers-are-an-allow-list) and the provider's extras. The
 * credential is added by the provider's client, last.
 */
export function upstreamRequestHeaders(
  client: IncomingHttpHeaders,
  provider: ProviderConfig,
  requestId: string,
): UpstreamRequestHeaders {
  const headers: Record<string, string> = {};
  const dropped: string[] = [];
  const table = FORWARDED_HEADERS[provider.protocol];
  for (const [name, raw] of Object.entries(client)) {
    if (raw === undefined) continue;
    const rule = Object.hasOwn(table, name) ? table[name] : undefined;
    if (rule?.action === 'replaced') continue;
    const joined = Array.isArray(raw) ? raw.join(', ') : raw;
    const value = rule?.action !== 'forward' ? '' : rule.values === undefined ? joined : allowedValues(joined, rule.values);
    if (value === '') dropped.push(droppedHeaderLabel(provider.protocol, name));
    else headers[name] = value;
  }
  Object.assign(headers, provider.headers, wireOf(provider).protocolHeaders(provider, true));
  headers['content-type'] = 'application/json';
  // The relay taps the bytes for usage, so they must arrive uncompressed.
  headers['accept-encoding'] = 'identity';
  headers['x-request-id'] = requestId;
  return { headers, dropped };
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
