/**
 * An HTTP provider behind an undici Pool: keep-alive connections reused across requests, no
 * pipelining (a long stream would block the requests queued behind it on the same socket).
 */
import { Pool } from 'undici';
import type { ProviderConfig } from '../config/types';
import type { UpstreamClient, UpstreamRequest, UpstreamResponse } from './types';

export class HttpUpstreamClient implements UpstreamClient {
  private readonly pool: Pool;
  private readonly basePath: string;

  constructor(readonly provider: ProviderConfig) {
    const url = new URL(provider.base_url);
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
    const response = await this.pool.request({
      method: 'POST',
      path: this.basePath + request.path,
      headers: request.headers,
      body: request.body,
      signal: request.signal,
    });
    return { status: response.statusCode, headers: response.headers, body: response.body };
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
