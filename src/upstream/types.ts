/** The seam between the gateway and whatever answers a request: an HTTP provider or the built-in echo. */
import type { Readable } from 'node:stream';
import type { ProviderConfig } from '../config/types';
import type { EndpointId } from '../protocols/types';
import type { AttemptSignal } from './attempt-abort';

export interface UpstreamRequest {
  /** The endpoint whose protocol the body is written in. */
  readonly endpoint: EndpointId;
  /** Path appended to the provider's base URL, e.g. `/v1/messages` or `/chat/completions`, query included. */
  readonly path: string;
  /** Final headers but the credentials, which the client adds (it may sign the whole request). */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer;
  /** One controller per attempt: aborting it cancels this attempt's socket and nothing else. */
  readonly signal: AttemptSignal;
}

export interface UpstreamResponse {
  readonly status: number;
  /** Lower-case names. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** Bytes as they arrive; destroying it releases the connection. */
  readonly body: Readable;
}

/** One per provider, shared by all requests to it. */
export interface UpstreamClient {
  readonly provider: ProviderConfig;
  send(request: UpstreamRequest): Promise<UpstreamResponse>;
  close(): Promise<void>;
}
