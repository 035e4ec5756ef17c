/**
 * DEMO provider `echo`: answers every endpoint locally, with no network and no key, so a fresh
 * install can be tried end to end (keys, billing, streaming) before any real provider is set up.
 *
 * Behaviour, all deterministic:
 * - The reply is `Echo: ` followed by the last user message's text (its text parts joined with a
 *   space; for Responses a string `input` or the last user item), that text cut to its first 50 echo
 *   tokens (see `tokenizer.ts`).
 * - Token counts are honest for the echo tokenizer: input = the tokens of every text in system /
 *   instructions / messages / input (at least 1), output = the tokens of the reply.
 * - `max_tokens`, `max_completion_tokens` and `max_output_tokens` cut the reply, which then ends with
 *   `length` / `max_tokens` / `incomplete`.
 * - Streams send one token (with its following whitespace) per text delta, as fast as they are read;
 *   chat streams carry the usage chunk only when `stream_options.include_usage` is true.
 * - `count_tokens` answers `{"input_tokens": n}`.
 */
import { Readable } from 'node:stream';
import type { ProviderConfig } from '../../config/types';
import { isObject } from '../../json';
import { GatewayError } from '../../kernel/errors';
import { errorBody } from '../../protocols/errors';
import { ENDPOINTS, type EndpointId } from '../../protocols/types';
import type { AttemptSignal } from '../../upstream/attempt-abort';
import type { UpstreamClient, UpstreamRequest, UpstreamResponse } from '../../upstream/types';
import { readEchoRequest } from './read-request';
import { echoFrames, echoJson } from './reply';

const JSON_TYPE = 'application/json';
const SSE_TYPE = 'text/event-stream; charset=utf-8';

function jsonResponse(status: number, value: unknown): UpstreamResponse {
  const bytes = Buffer.from(JSON.stringify(value));
  return {
    status,
    headers: { 'content-type': JSON_TYPE, 'content-length': String(bytes.length) },
    body: Readable.from([bytes], { objectMode: false }),
  };
}

/** A 400 in the endpoint's own error envelope; the kernel validates bodies first, so this is a guard. */
function invalidBody(endpoint: EndpointId, message: string): UpstreamResponse {
  const error = new GatewayError('TOLLGATE_ERR_BODY_INVALID_JSON', message);
  return jsonResponse(error.status, errorBody(error, ENDPOINTS[endpoint].errorShape));
}

function parseBody(body: Buffer): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(body.toString('utf8'));
    return isObject(value) ? value : null;
  } catch {
    return null;
  }
}

/** Bytes of the frames, skipping the empty strings a writer returns for no-op events. */
function* frameBytes(frames: Iterable<string>): Generator<Buffer> {
  for (const frame of frames) if (frame !== '') yield Buffer.from(frame);
}

/** As with a socket, aborting the attempt tears the body down, with the abort reason as its error. */
function destroyOnAbort(body: Readable, signal: AttemptSignal): Readable {
  const onAbort = (): void => {
    body.destroy(signal.reason instanceof Error ? signal.reason : new Error('The request was aborted.'));
  };
  signal.addEventListener('abort', onAbort, { once: true });
  body.once('close', () => signal.removeEventListener('abort', onAbort));
  return body;
}

/** The built-in demo upstream; see the header of this file for what it answers. */
export class EchoClient implements UpstreamClient {
  readonly provider: ProviderConfig;

  constructor(provider: ProviderConfig) {
    this.provider = provider;
  }

  async send(request: UpstreamRequest): Promise<UpstreamResponse> {
    request.signal.throwIfAborted();
    const response = this.answer(request);
    destroyOnAbort(response.body, request.signal);
    return response;
  }

  private answer({ endpoint, body: bytes }: UpstreamRequest): UpstreamResponse {
    const body = parseBody(bytes);
    if (body === null) return invalidBody(endpoint, 'The request body must be a JSON object.');
    const echoRequest = readEchoRequest(endpoint, body);
    if (!echoRequest.stream) return jsonResponse(200, echoJson(endpoint, echoRequest, body));
    const frames = Readable.from(frameBytes(echoFrames(endpoint, echoRequest, body)), { objectMode: false });
    return { status: 200, headers: { 'content-type': SSE_TYPE }, body: frames };
  }

  /** Nothing to release: the echo holds no connections. */
  async close(): Promise<void> {}
}
