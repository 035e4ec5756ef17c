/**
 * One attempt at one route, native or translated alike: the leg's request goes to the provider, and
 * its answer is judged before anything reaches the client. A plain reply is read whole and must be
 * readable; a stream is read up to its first event, which must not be an error. Only then is the
 * answer committed; until then every failure can still fail over.
 */
import { need } from '../kernel/need';
import { GatewayError } from '../kernel/errors';
import type { Target } from '../routing/resolve';
import { wireOf } from '../wire';
import { AttemptFailure, discard, invalidReply, retryAfterMs, type AttemptLeg, type Commit, type RouteTranslator } from './attempt';
import type { AttemptSignal } from './attempt-abort';
import { attemptFailure } from './failures';
import { readFirstEvent } from './first-event';
import { upstreamRequestIdOf } from './headers';
import { MAX_ERROR_BODY_BYTES, readBody, ReplyTooLarge, scrubbed } from './read-body';
import { headOf } from '../protocols/byte-pieces';
import { SseEventTooLarge } from '../protocols/sse';
import { Relay } from './relay';
import { failureFromErrorEvent } from './stream-error';
import type { GatewayContext } from '../kernel/context';
import type { UpstreamClient, UpstreamResponse } from './types';

/** A first event with a data line this long is not decoded to be judged. */
const RAW_FIRST_EVENT_BYTES = 256 * 1024;
/** How much of such an event's data its judge reads: an error object says so in its first bytes. */
const JUDGED_BYTES = 1024;

/** Rejects a 401/403: the provider refused *our* key; the client can do nothing and must not see why. */
function credentialsRefused(target: Target, response: UpstreamResponse): AttemptFailure {
  discard(response.body);
  return new AttemptFailure(
    'status',
    response.status,
    new GatewayError('TOLLGATE_ERR_UPSTREAM_AUTH', `The upstream provider '${target.provider.id}' rejected the gateway's credentials; the operator has been told.`, {
      cause: new Error(`upstream answered ${response.status}`),
    }),
  );
}

export async function attemptRoute(ctx: GatewayContext, target: Target, client: UpstreamClient, route: RouteTranslator, signal: AttemptSignal): Promise<Commit> {
  const { stream } = need(ctx, 'request');
  const { provider } = target;
  const wire = wireOf(provider);
  // Outside the try: a request the route's protocol cannot express is refused, not retried elsewhere.
  const leg = route.begin(ctx, target);
  try {
    const response = await client.send({ endpoint: leg.call.endpoint, path: wire.path(leg.call, provider), headers: leg.headers, body: leg.body, signal });
    if (response.status === 401 || response.status === 403) throw credentialsRefused(target, response);
    if (response.status >= 400) {
      const received = scrubbed(await readBody(response.body, MAX_ERROR_BODY_BYTES, 'cut'), provider.api_key);
      const reply = wire.errorReply(response.status, received, response.headers);
      throw new AttemptFailure('status', reply.status, leg.error(reply, received, response.headers), retryAfterMs(response.headers));
    }
    if (response.status >= 300) {
      // An API endpoint that redirects is misconfigured (a wrong base URL), and the redirect, stripped
      // of the Location the client could not follow anyway, means nothing to an SDK: a 502.
      discard(response.body);
      throw invalidReply(target, `the provider answered ${response.status}, a redirect: check its base_url`);
    }
    if (wire.framing.isStream(response.headers) !== stream) {
      discard(response.body);
      // A streaming client handed one JSON body reads zero chunks and no error (docs/protocols.md#fact-4);
      // a plain client handed a stream fails to parse it.
      throw invalidReply(target, `the provider answered ${stream ? 'without' : 'with'} a stream, contrary to the request`);
    }
    const maxReplyBytes = ctx.state.config.server.max_reply_bytes;
    return stream ? await streamAnswer(target, leg, response, maxReplyBytes) : await plainAnswer(leg, response, maxReplyBytes);
  } catch (error) {
    // Nothing has reached the client: a reply (or first event) over the limit is an invalid reply, and another route may do better.
    if (error instanceof ReplyTooLarge || error instanceof SseEventTooLarge) throw invalidReply(target, error.message);
    throw attemptFailure(error, provider.id, signal);
  }
}

async function plainAnswer(leg: AttemptLeg, response: UpstreamResponse, maxReplyBytes: number): Promise<Commit> {
  const read = leg.reply(await readBody(response.body, maxReplyBytes, 'fail'), response);
  // Only a large reply is read elsewhere; a small one costs no extra turn.
  const answer = read instanceof Promise ? await read : read;
  return {
    upstreamRequestId: upstreamRequestIdOf(response.headers),
    commit(ctx, report) {
      ctx.status = answer.status;
      ctx.set(answer.headers);
      ctx.body = answer.body;
      report({ kind: 'delivered' }, answer.usage, answer.status, answer.outputTokens, answer.replyId);
    },
  };
}

async function streamAnswer(target: Target, leg: AttemptLeg, response: UpstreamResponse, maxReplyBytes: number): Promise<Commit> {
  const { framing, isErrorEvent } = wireOf(target.provider);
  // A first event of many MiB (a partial image) is judged by its name and first bytes, never decoded whole.
  const head = await readFirstEvent(response.body, framing.newParser(maxReplyBytes, RAW_FIRST_EVENT_BYTES));
  if (head.first === null) throw invalidReply(target, 'the stream ended before its first event');
  const { raw } = head.first;
  const judged = raw === undefined ? head.first : { event: head.first.event, data: headOf(raw, JUDGED_BYTES).toString('utf8') };
  if (isErrorEvent(judged)) {
    discard(response.body);
    throw failureFromErrorEvent(judged);
  }
  return {
    upstreamRequestId: upstreamRequestIdOf(response.headers),
    commit(ctx, report) {
      const { status, headers } = leg.streamHead(response);
      ctx.status = status;
      ctx.set(headers);
      ctx.set('cache-control', 'no-cache');
      ctx.set('x-accel-buffering', 'no');
      ctx.body = new Relay(response.body, leg.stream(), {
        head: head.chunks,
        providerId: target.provider.id,
        onEnd: (end, usage, outputTokens, replyId) => report(end, usage, status, outputTokens, replyId),
      });
      // No flushHeaders(): the head chunks are ready, so the headers leave with the first event in one
      // write. From here a failure can only end the stream with an error event.
    },
  };
}
