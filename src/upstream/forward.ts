/**
 * One native attempt: the client's bytes go to the provider (model rename the only edit, DECISIONS.md 2)
 * and the provider's answer comes back as it arrives. Upstream errors follow DECISIONS.md 13.
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
import type { UpstreamClient } from './types';

/** nginx's status for a request whose client closed the connection first; it only reaches logs. */
const CLIENT_CLOSED_REQUEST = 499;

/** Error bodies are small; one larger than this is cut rather than held. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;

async function readCapped(body: Readable, cap: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    if (size + chunk.length > cap) {
      chunks.push(chunk.subarray(0, cap - size));
      body.destroy();
      break;
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return Buffer.concat(chunks);
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
 * Sends the request to `target` through `client` and sets the Koa response. Resolves once the
 * response head is decided; `ctx.state.exchange.finished` resolves when the body is done.
 */
export async function forwardNative(ctx: GatewayContext, target: Target, client: UpstreamClient): Promise<void> {
  const { endpoint, requestId } = ctx.state;
  const request = ctx.state.request!;
  const { provider, route } = target;

  let settle!: (outcome: ExchangeOutcome) => void;
  const finished = new Promise<ExchangeOutcome>((resolve) => (settle = resolve));
  ctx.state.exchange = { provider: provider.id, upstreamModel: route.upstream_model, finished };
  const end = (kind: ExchangeEnd, usage: Usage | null = null, status = ctx.status) =>
    settle({ end: kind, status, provider: provider.id, usage: usageFor(kind, usage) });

  // One controller per attempt, aborted when the client goes away before the body is done.
  const attempt = new AbortController();
  const onClientGone = () => {
    if (!ctx.res.writableFinished) attempt.abort();
  };
  ctx.res.once('close', onClientGone);

  const body =
    route.upstream_model === request.model.id ? request.raw : replaceModel(request.raw, request.modelSpan, route.upstream_model);
  let response;
  try {
    response = await client.send({
      endpoint: endpoint.id,
      path: upstreamPath(endpoint) + forwardedQuery(ctx, provider.protocol),
      headers: upstreamRequestHeaders(ctx.headers, provider, requestId),
      body,
      signal: attempt.signal,
    });
  } catch (err) {
    if (attempt.signal.aborted && isAbort(err)) {
      // The client left before the provider answered: nobody is there to receive an error.
      ctx.status = CLIENT_CLOSED_REQUEST;
      end({ kind: 'aborted' });
      return;
    }
    const failure = upstreamFailure(err, provider.id);
    end({ kind: 'failed', error: failure }, null, failure.status);
    throw failure;
  }

  if (response.status === 401 || response.status === 403) {
    response.body.resume();
    const failure = new GatewayError(
      'TOLLGATE_ERR_UPSTREAM_AUTH',
      `The upstream provider '${provider.id}' rejected the gateway's credentials; the operator has been told.`,
      { cause: new Error(`upstream answered ${response.status}`) },
    );
    end({ kind: 'failed', error: failure }, null, failure.status);
    throw failure;
  }

  ctx.status = response.status;
  ctx.set(relayedResponseHeaders(response.headers));

  if (response.status >= 400) {
    ctx.body = scrubbed(await readCapped(response.body, MAX_ERROR_BODY_BYTES), provider.api_key);
    end({ kind: 'failed', error: new Error(`upstream answered ${response.status}`) });
    return;
  }

  const streaming = String(response.headers['content-type'] ?? '').startsWith('text/event-stream');
  if (streaming) {
    ctx.set('cache-control', 'no-cache');
    ctx.set('x-accel-buffering', 'no');
  }
  const tap = usageTapFor(endpoint.id, streaming);
  ctx.body = new Relay(response.body, {
    tap,
    onEnd: (kind) => {
      ctx.res.off('close', onClientGone);
      end(kind, tap.result());
    },
    failureFrame: (error) => (streaming ? streamErrorFrame(streamBroken(error, provider.id), endpoint.id) : null),
  });
  const length = response.headers['content-length'];
  if (!streaming && typeof length === 'string') ctx.length = Number(length);
  // Commit the head now: the client learns the status at once, and a body that fails later can only
  // end the stream (an error frame, or a cut connection), never turn into a second response.
  ctx.flushHeaders();
}

/**
 * The query string sent upstream. Only `beta=true`, which the Anthropic SDK's beta methods and Claude
 * Code add and the Messages API reads, is kept; anything else a client appends stays here.
 */
function forwardedQuery(ctx: GatewayContext, protocol: string): string {
  return protocol === 'anthropic' && ctx.query.beta === 'true' ? '?beta=true' : '';
}

function streamBroken(error: unknown, provider: string): GatewayError {
  return new GatewayError('TOLLGATE_ERR_STREAM_INTERRUPTED', `The upstream provider '${provider}' broke off the stream.`, {
    cause: error,
  });
}
