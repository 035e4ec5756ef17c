/**
 * One native attempt: the client's bytes go to the provider (model rename the only edit,
 * docs/decisions.md#d2-native-requests-pass-through) and the provider's answer is judged before anything
 * reaches the client. A plain reply is read whole and must be JSON; a stream is read up to its first event,
 * which must not be an error. Only then is the answer committed; until then every failure can still fail
 * over. Upstream errors follow docs/decisions.md#d13-upstream-errors-on-native-routes-are-relayed: relayed
 * unchanged (key scrubbed), except 401/403, which are the gateway's problem.
 */
import { tryParse } from '../json';
import type { GatewayContext } from '../kernel/context';
import { need } from '../kernel/need';
import { GatewayError } from '../kernel/errors';
import { streamErrorFrame } from '../protocols/errors';
import { countTokensAsync } from '../billing/tokenizer';
import { replyText } from '../protocols/output-text';
import { needsUsageRequested, UsageChunkRemover, withUsageRequested } from '../protocols/openai-chat/stream-usage';
import { replyId, replyUsage } from '../protocols/reply-usage';
import { usageTapFor } from '../protocols/usage-tap';
import type { Target } from '../routing/resolve';
import { wireOf } from '../wire';
import { AttemptFailure, discard, retryAfterMs, type Commit } from './attempt';
import type { AttemptSignal } from './attempt-abort';
import { attemptFailure } from './failures';
import { readFirstEvent } from './first-event';
import { relayedResponseHeaders, upstreamRequestHeaders, upstreamRequestIdOf } from './headers';
import { MAX_ERROR_BODY_BYTES, MAX_PLAIN_BODY_BYTES, readBody, scrubbed } from './read-body';
import { Relay, type StreamFilter } from './relay';
import { failureFromErrorEvent } from './stream-error';
import type { UpstreamClient, UpstreamResponse } from './types';

/** Rejects a 401/403: the provider refused *our* key; the client can do nothing and must not see why. */
export function credentialsRefused(target: Target, response: UpstreamResponse): AttemptFailure {
  discard(response.body);
  return new AttemptFailure(
    'status',
    response.status,
    new GatewayError('TOLLGATE_ERR_UPSTREAM_AUTH', `The upstream provider '${target.provider.id}' rejected the gateway's credentials; the operator has been told.`, {
      cause: new Error(`upstream answered ${response.status}`),
    }),
  );
}

/**
 * Rejects a 3xx: an API endpoint that redirects is misconfigured (a wrong base URL), and the redirect,
 * stripped of the Location the client could not follow anyway, means nothing to an SDK: a 502.
 */
export function redirected(target: Target, response: UpstreamResponse): AttemptFailure {
  discard(response.body);
  return invalidReply(target, `the provider answered ${response.status}, a redirect: check its base_url`);
}

/** Rejects an answer streamed when the request was not (or whole when it was): the SDK could not read it. */
export function streamMismatch(target: Target, response: UpstreamResponse, stream: boolean): AttemptFailure {
  discard(response.body);
  // A streaming client handed one JSON body reads zero chunks and no error (docs/protocols.md#fact-4);
  // a plain client handed a stream fails to parse it.
  return invalidReply(target, `the provider answered ${stream ? 'without' : 'with'} a stream, contrary to the request`);
}

export function invalidReply(target: Target, why: string): AttemptFailure {
  return new AttemptFailure(
    'invalid',
    null,
    new GatewayError('TOLLGATE_ERR_UPSTREAM_INVALID_RESPONSE', `The upstream provider '${target.provider.id}' sent an invalid reply.`, {
      cause: new Error(why),
    }),
  );
}

export async function attemptNative(ctx: GatewayContext, target: Target, client: UpstreamClient, signal: AttemptSignal): Promise<Commit> {
  const { endpoint, requestId } = ctx.state;
  const request = need(ctx, 'request');
  const { provider, route } = target;
  const wire = wireOf(provider);
  const call = { endpoint: endpoint.id, upstreamModel: route.upstream_model, stream: request.stream, beta: ctx.query.beta === 'true' };
  // Billing needs the provider's own counts of a chat stream (reasoning is billed, never shown).
  const askUsage = endpoint.id === 'chat' && needsUsageRequested(request.body);

  try {
    // Built inside the try: a body the protocol cannot carry is an invalid attempt, not a crash.
    const native = wire.nativeBody({ request, endpoint: endpoint.id, upstreamModel: route.upstream_model, clientHeaders: ctx.headers });
    const body = askUsage ? withUsageRequested(native, request.body) : native;
    const response = await client.send({
      endpoint: endpoint.id,
      path: wire.path(call, provider),
      headers: upstreamRequestHeaders(ctx.headers, provider, ctx.state.clientRequestId ?? requestId),
      body,
      signal,
    });
    if (response.status === 401 || response.status === 403) throw credentialsRefused(target, response);
    if (response.status >= 400) throw await relayedError(target, response);
    if (response.status >= 300) throw redirected(target, response);
    if (wire.framing.isStream(response.headers) !== request.stream) throw streamMismatch(target, response, request.stream);
    if (request.stream) return await streamAnswer(ctx, target, response, askUsage ? new UsageChunkRemover() : undefined);
    return await plainAnswer(ctx, target, response);
  } catch (error) {
    throw attemptFailure(error, provider.id, signal);
  }
}

/**
 * An upstream error about the request, to relay if it is the last word: unchanged from a provider that
 * speaks the client's protocol, rewritten in its shape from one that does not (Bedrock, Vertex).
 */
async function relayedError(target: Target, response: UpstreamResponse): Promise<AttemptFailure> {
  const bytes = scrubbed(await readBody(response.body, MAX_ERROR_BODY_BYTES, 'cut'), target.provider.api_key);
  const { status, body } = wireOf(target.provider).errorReply(response.status, bytes, response.headers);
  const headers = relayedResponseHeaders(response.headers);
  if (body !== bytes) headers['content-type'] = 'application/json';
  return new AttemptFailure('status', status, { status, headers, body }, retryAfterMs(response.headers));
}

async function plainAnswer(ctx: GatewayContext, target: Target, response: UpstreamResponse): Promise<Commit> {
  const { id: endpoint } = ctx.state.endpoint;
  const bytes = wireOf(target.provider).plainReply(endpoint, await readBody(response.body, MAX_PLAIN_BODY_BYTES, 'fail'));
  // Parsed once: a cut or garbled body would reach the SDK as a parse error (another route may do
  // better), and the same parse gives the usage. The client still gets the bytes as they came.
  const parsed = tryParse(bytes.toString('utf8'));
  if (parsed === null) throw invalidReply(target, 'the reply body is not JSON');
  return {
    upstreamRequestId: upstreamRequestIdOf(response.headers),
    commit(ctx, report) {
      ctx.status = response.status;
      ctx.set(relayedResponseHeaders(response.headers));
      ctx.body = bytes;
      report(
        { kind: 'delivered' },
        replyUsage(endpoint, parsed),
        response.status,
        () => countTokensAsync(replyText(endpoint, parsed)),
        replyId(endpoint, parsed),
      );
    },
  };
}

async function streamAnswer(ctx: GatewayContext, target: Target, response: UpstreamResponse, filter?: StreamFilter): Promise<Commit> {
  const { framing, isErrorEvent } = wireOf(target.provider);
  const head = await readFirstEvent(response.body, framing.newParser());
  if (head.first === null) throw invalidReply(target, 'the stream ended before its first event');
  if (isErrorEvent(head.first)) {
    discard(response.body);
    throw failureFromErrorEvent(head.first);
  }
  const { endpoint } = ctx.state;
  return {
    upstreamRequestId: upstreamRequestIdOf(response.headers),
    commit(ctx, report) {
      const tap = usageTapFor(endpoint.id);
      ctx.status = response.status;
      ctx.set(relayedResponseHeaders(response.headers));
      if (!framing.passthrough) ctx.set('content-type', 'text/event-stream; charset=utf-8');
      ctx.set('cache-control', 'no-cache');
      ctx.set('x-accel-buffering', 'no');
      ctx.body = new Relay(response.body, {
        head: head.chunks,
        reframe: framing.passthrough ? null : framing.newParser(),
        tap,
        ...(filter !== undefined && { filter }),
        onEnd: (kind) => report(kind, tap.result(), response.status, () => tap.outputTokens(), tap.replyId?.() ?? null),
        failureFrame: (error) =>
          streamErrorFrame(
            error instanceof GatewayError
              ? error
              : new GatewayError('TOLLGATE_ERR_STREAM_INTERRUPTED', `The upstream provider '${target.provider.id}' broke off the stream.`, { cause: error }),
            endpoint.id,
          ),
      });
      // No flushHeaders(): the head chunks are ready, so the headers leave with the first event in one
      // write. From here a failure can only end the stream with an error event.
    },
  };
}
