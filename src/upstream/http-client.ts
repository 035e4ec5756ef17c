/**
 * An HTTP provider behind an undici Pool: keep-alive connections reused across requests, no
 * pipelining (a long stream would block the requests queued behind it on the same socket).
 */
import { Pool } from 'undici';
import type { ProviderConfig } from '../config/types';
import type { RequestAuthenticator } from '../wire/types';
import type { UpstreamClient, UpstreamRequest, UpstreamResponse } from './types';

export class HttpUpstreamClient implements UpstreamClient {
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly origin: string;

  constructor(
    readonly provider: ProviderConfig,
    /** Adds the provider's credentials to each request, last, so a signature covers the final request. */
    private readonly authenticator: RequestAuthenticator,
  ) {
    const url = new URL(provider.base_url);
    this.origin = url.origin;
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.pool = new Pool(url.origin, {
      connections: provider.max_connections,
      pipelining: 1,
      keepAliveTimeout: 30_000,
      connect: { timeout: provider.timeouts.connect_ms },
      headersTimeout: provider.timeouts.first_byte_ms,
      bodyTimeout: provider.timeouts.idle_ms,
    });
  }

  async send(request: UpstreamRequest): Promise<UpstreamResponse> {
    const path = this.basePath + request.path;
    const outgoing = { origin: this.origin, path, headers: { ...request.headers }, body: request.body };
    await this.authenticator.authenticate(outgoing);
    const response = await this.pool.request({
      method: 'POST',
      path,
      headers: outgoing.headers,
      body: request.body,
      signal: request.signal,
    });
    if (response.statusCode === 401) this.authenticator.refused?.();
    return { status: response.statusCode, headers: response.headers, body: response.body };
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
