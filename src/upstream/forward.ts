/**
 * One native attempt: the client's bytes go to the provider (model rename the only edit, DECISIONS.md 2)
 * and the provider's answer comes back. Streams are relayed as they arrive; plain bodies, which a
 * client cannot use before they are whole, are read first so a failure can still be a clean error.
 * Upstream errors follow DECISIONS.md 13.
 */
import type { GatewayContext } from '../kernel/context';
import { GatewayError } from '../kernel/errors';
import { replaceModel } from '../kernel/json-scan';
import { streamErrorFrame } from '../protocols/errors';
import { usageTapFor } from '../protocols/usage-tap';
import { upstreamPath, type Target } from '../routing/resolve';
import { failExchange, openExchange, type EndExchange } from './exchange';
import { relayedResponseHeaders, upstreamRequestHeaders } from './headers';
import { isEventStream, MAX_ERROR_BODY_BYTES, MAX_PLAIN_BODY_BYTES, readBody, scrubbed } from './read-body';
import { Relay } from './relay';
import type { UpstreamClient, UpstreamResponse } from './types';

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

  const exchange = openExchange(ctx, target);
  const { signal, end } = exchange;

  const body =
    route.upstream_model === request.model.id ? request.raw : replaceModel(request.raw, request.modelSpan, route.upstream_model);
  try {
    const response = await client.send({
      endpoint: endpoint.id,
      path: upstreamPath(endpoint) + forwardedQuery(ctx, provider.protocol),
      headers: upstreamRequestHeaders(ctx.headers, provider, requestId),
      body,
      signal,
    });
    if (response.status >= 400) await answerError(ctx, target, response, end);
    else if (isEventStream(response)) answerStream(ctx, target, response, end);
    else await answerPlain(ctx, response, end);
  } catch (err) {
    failExchange(ctx, err, exchange, provider.id);
  }
}

async function answerError(ctx: GatewayContext, { provider }: Target, response: UpstreamResponse, end: EndExchange): Promise<void> {
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

async function answerPlain(ctx: GatewayContext, response: UpstreamResponse, end: EndExchange): Promise<void> {
  const bytes = await readBody(response.body, MAX_PLAIN_BODY_BYTES, 'fail');
  const tap = usageTapFor(ctx.state.endpoint.id, false);
  tap.observe(bytes);
  ctx.status = response.status;
  ctx.set(relayedResponseHeaders(response.headers));
  ctx.body = bytes;
  end({ kind: 'delivered' }, tap.result(), response.status, () => tap.outputText());
}

function answerStream(ctx: GatewayContext, { provider }: Target, response: UpstreamResponse, end: EndExchange): void {
  const { endpoint } = ctx.state;
  const tap = usageTapFor(endpoint.id, true);
  ctx.status = response.status;
  ctx.set(relayedResponseHeaders(response.headers));
  ctx.set('cache-control', 'no-cache');
  ctx.set('x-accel-buffering', 'no');
  ctx.body = new Relay(response.body, {
    tap,
    onEnd: (kind) => end(kind, tap.result(), ctx.status, () => tap.outputText()),
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
