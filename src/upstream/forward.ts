/**
 * One native attempt: the client's bytes go to the provider (model rename the only edit, DECISIONS.md 2)
 * and the provider's answer comes back. Streams are relayed as they arrive; plain bodies, which a
 * client cannot use before they are whole, are read first so a failure can still be a clean error.
 * Upstream errors follow DECISIONS.md 13.
 */
import type { Readable } from 'node:stream';
import type { ExchangeEnd, ExchangeOutcome, GatewayContext } from '../kernel/context';
import { GatewayError } from '../kernel/errors';
import { replaceModel } from '../kernel/json-scan';
import { streamErrorFrame } from '../protocols/errors';
import type { Usage } from '../protocols/types';
import { usageTapFor } from '../protocols/usage-tap';
import { upstreamPath, type Target } from '../routing/resolve';
import { isAbort, upstreamFailure } from './failures';
import { relayedResponseHeaders, upstreamRequestHeaders } from './headers';
import { Relay } from './relay';
import type { UpstreamClient, UpstreamResponse } from './types';

/** nginx's status for a request whose client closed the connection first; it only reaches logs. */
const CLIENT_CLOSED_REQUEST = 499;
/** Error bodies are small; one larger than this is cut rather than held. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** A plain (non-streamed) reply larger than this is refused rather than held in memory. */
const MAX_PLAIN_BODY_BYTES = 64 * 1024 * 1024;

type End = (end: ExchangeEnd, usage?: Usage | null, status?: number) => void;

/**
 * Reads a whole body; past `cap` bytes it either cuts (error bodies) or fails (replies). Plain
 * listeners rather than `for await`: the async iterator costs a promise per chunk on the hot path.
 */
function readBody(body: Readable, cap: number, overflow: 'cut' | 'fail'): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
    body.on('data', (chunk: Buffer) => {
      if (size + chunk.length <= cap) {
        chunks.push(chunk);
        size += chunk.length;
        return;
      }
      body.removeAllListeners('data').removeAllListeners('end');
      body.destroy();
      if (overflow === 'fail') return reject(new Error(`upstream reply exceeds ${cap} bytes`));
      chunks.push(chunk.subarray(0, cap - size));
      size = cap;
      done();
    });
    body.once('end', done);
    body.once('error', reject);
    body.once('close', () => reject(new Error('upstream closed the body before its end')));
  });
}

/** An upstream error body with every occurrence of the provider's key blanked, in case it echoed it. */
function scrubbed(body: Buffer, secret: string): Buffer {
  if (secret.length < 8 || body.indexOf(secret) === -1) return body;
  return Buffer.from(body.toString('utf8').split(secret).join('[redacted]'));
}

function usageFor(end: ExchangeEnd, usage: Usage | null): Usage | null {
  if (usage === null || end.kind === 'delivered') return usage;
  return { ...usage, source: 'partial' };
}

/**
 * The query string sent upstream. Only `beta=true`, which the Anthropic SDK's beta methods and Claude
 * Code add and the Messages API reads, is kept; anything else a client appends stays here.
 */
function forwardedQuery(ctx: GatewayContext, protocol: string): string {
  return protocol === 'anthropic' && ctx.query.beta === 'true' ? '?beta=true' : '';
}

/**
 * Sends the request to `target` through `client` and sets the Koa response. Resolves once the
 * response is decided; `ctx.state.exchange.finished` resolves when the body is done.
 */
export async function forwardNative(ctx: GatewayContext, target: Target, client: UpstreamClient): Promise<void> {
  const { endpoint, requestId } = ctx.state;
  const request = ctx.state.request!;
  const { provider, route } = target;

  let settle!: (outcome: ExchangeOutcome) => void;
  const finished = new Promise<ExchangeOutcome>((resolve) => (settle = resolve));
  ctx.state.exchange = { provider: provider.id, upstreamModel: route.upstream_model, finished };

  // One controller per attempt, aborted when the client goes away before the body is done.
  const attempt = new AbortController();
  const onClientGone = () => {
    if (!ctx.res.writableFinished) attempt.abort();
  };
  ctx.res.once('close', onClientGone);
  const end: End = (kind, usage = null, status = ctx.status) => {
    ctx.res.off('close', onClientGone);
    settle({ end: kind, status, provider: provider.id, usage: usageFor(kind, usage) });
  };

  const body =
    route.upstream_model === request.model.id ? request.raw : replaceModel(request.raw, request.modelSpan, route.upstream_model);
  try {
    const response = await client.send({
      endpoint: endpoint.id,
      path: upstreamPath(endpoint) + forwardedQuery(ctx, provider.protocol),
      headers: upstreamRequestHeaders(ctx.headers, provider, requestId),
      body,
      signal: attempt.signal,
    });
    if (response.status >= 400) await answerError(ctx, target, response, end);
    else if (isEventStream(response)) answerStream(ctx, target, response, end);
    else await answerPlain(ctx, response, end);
  } catch (err) {
    if (attempt.signal.aborted && isAbort(err)) {
      // The client left before the answer was decided: nobody is there to receive an error.
      ctx.status = CLIENT_CLOSED_REQUEST;
      end({ kind: 'aborted' });
      return;
    }
    const failure = upstreamFailure(err, provider.id);
    end({ kind: 'failed', error: failure }, null, failure.status);
    throw failure;
  }
}

function isEventStream(response: UpstreamResponse): boolean {
  return String(response.headers['content-type'] ?? '').startsWith('text/event-stream');
}

async function answerError(ctx: GatewayContext, { provider }: Target, response: UpstreamResponse, end: End): Promise<void> {
  if (response.status === 401 || response.status === 403) {
    // The provider refused *our* key: the client can do nothing about it, and must not see why.
    response.body.resume();
    throw new GatewayError(
      'TOLLGATE_ERR_UPSTREAM_AUTH',
      `The upstream provider '${provider.id}' rejected the gateway's credentials; the operator has been told.`,
      { cause: new Error(`upstream answered ${response.status}`) },
    );
  }
  const bytes = await readBody(response.body, MAX_ERROR_BODY_BYTES, 'cut');
  ctx.status = response.status;
  ctx.set(relayedResponseHeaders(response.headers));
  ctx.body = scrubbed(bytes, provider.api_key);
  end({ kind: 'failed', error: new Error(`upstream answered ${response.status}`) });
}

async function answerPlain(ctx: GatewayContext, response: UpstreamResponse, end: End): Promise<void> {
  const bytes = await readBody(response.body, MAX_PLAIN_BODY_BYTES, 'fail');
  const tap = usageTapFor(ctx.state.endpoint.id, false);
  tap.observe(bytes);
  ctx.status = response.status;
  ctx.set(relayedResponseHeaders(response.headers));
  ctx.body = bytes;
  end({ kind: 'delivered' }, tap.result());
}

function answerStream(ctx: GatewayContext, { provider }: Target, response: UpstreamResponse, end: End): void {
  const { endpoint } = ctx.state;
  const tap = usageTapFor(endpoint.id, true);
  ctx.status = response.status;
  ctx.set(relayedResponseHeaders(response.headers));
  ctx.set('cache-control', 'no-cache');
  ctx.set('x-accel-buffering', 'no');
  ctx.body = new Relay(response.body, {
    tap,
    onEnd: (kind) => end(kind, tap.result()),
    failureFrame: (error) =>
      streamErrorFrame(
        new GatewayError('TOLLGATE_ERR_STREAM_INTERRUPTED', `The upstream provider '${provider.id}' broke off the stream.`, {
          cause: error,
        }),
        endpoint.id,
      ),
  });
  // Commit the head now: the client learns the status at once, and a failure later can only end the
  // stream with an error event, never turn into a second response.
  ctx.flushHeaders();
}
