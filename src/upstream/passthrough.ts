/**
 * The passthrough: a route that speaks the client's protocol gets the client's bytes, the model
 * renamed the only edit (docs/decisions.md#d2-native-requests-pass-through), and the client gets the
 * provider's answer as it came, its usage read on the side. Upstream errors are relayed unchanged, key
 * scrubbed (docs/decisions.md#d13-upstream-errors-on-native-routes-are-relayed); a provider outside
 * the client's family (Bedrock, Vertex) has them rewritten in the family's shape first.
 */
import { tryParse } from '../json';
import type { GatewayContext } from '../kernel/context';
import { need } from '../kernel/need';
import { countReplyTokensAsync, countTokensAsync, readLargeAsync } from '../billing/tokenizer';
import { streamErrorFrame } from '../protocols/errors';
import { needsUsageRequested, UsageChunkRemover, withUsageRequested } from '../protocols/openai-chat/stream-usage';
import { replyText } from '../protocols/output-text';
import { replyId, replyUsage } from '../protocols/reply-usage';
import { sseFrame } from '../protocols/sse';
import type { EndpointId } from '../protocols/types';
import { usageTapFor } from '../protocols/usage-tap';
import type { Target } from '../routing/resolve';
import { wireOf } from '../wire';
import type { FrameParser } from '../wire/types';
import { invalidReply, type AttemptLeg, type PlainAnswer, type RouteTranslator, type StreamCodec } from './attempt';
import { relayedResponseHeaders, upstreamRequestHeaders } from './headers';
import type { UpstreamResponse } from './types';

/**
 * A whole reply this large is parsed in the tokenizer's thread rather than on the event loop (an image
 * in base64): JSON.parse cannot yield, and a body of MiB holds the loop for tens of ms. Below it, the
 * reply is parsed here at once, as the small replies that make up nearly all traffic always were.
 */
const PARSE_ELSEWHERE_BYTES = 1024 * 1024;

export const PASSTHROUGH: RouteTranslator = {
  begin(ctx: GatewayContext, target: Target): AttemptLeg {
    const { endpoint, requestId } = ctx.state;
    const request = need(ctx, 'request');
    const { provider, route } = target;
    const wire = wireOf(provider);
    // Billing needs the provider's own counts of a chat stream (reasoning is billed, never shown).
    const askUsage = endpoint.id === 'chat' && needsUsageRequested(request.body);
    const maxReplyBytes = ctx.state.config.server.max_reply_bytes;
    const native = wire.nativeBody({ request, endpoint: endpoint.id, upstreamModel: route.upstream_model, clientHeaders: ctx.headers });
    /**
     * A large reply, parsed in the tokenizer's thread: judged the same way (not JSON: another route may
     * do better), its usage and id read from its skeleton by the same code, its output counted there
     * only if billing asks. The client gets the bytes as they came, and the event loop never holds a
     * decoded copy of them.
     */
    const largeReply = async (bytes: Buffer, response: UpstreamResponse): Promise<PlainAnswer> => {
      const { skeleton } = await readLargeAsync([bytes], endpoint.id, 'reply', false).facts;
      if (skeleton === null) throw invalidReply(target, 'the reply body is not JSON');
      const parsed = JSON.parse(skeleton) as unknown;
      return {
        status: response.status,
        headers: relayedResponseHeaders(response.headers),
        body: bytes,
        usage: replyUsage(endpoint.id, parsed),
        outputTokens: () => countReplyTokensAsync(endpoint.id, bytes),
        replyId: replyId(endpoint.id, parsed),
      };
    };
    const { headers, dropped } = upstreamRequestHeaders(ctx.headers, provider, ctx.state.clientRequestId ?? requestId);
    return {
      call: { endpoint: endpoint.id, upstreamModel: route.upstream_model, stream: request.stream, beta: ctx.query.beta === 'true' },
      headers,
      droppedHeaders: dropped,
      body: askUsage ? withUsageRequested(native, request.body) : native,
      error(reply, received, headers) {
        const relayed = relayedResponseHeaders(headers);
        if (reply.body !== received) relayed['content-type'] = 'application/json';
        return { status: reply.status, headers: relayed, body: reply.body };
      },
      reply(received, response) {
        const bytes = wire.plainReply(endpoint.id, received);
        if (bytes.length >= PARSE_ELSEWHERE_BYTES) return largeReply(bytes, response);
        // Parsed once: a cut or garbled body would reach the SDK as a parse error (another route may do
        // better), and the same parse gives the usage. The client still gets the bytes as they came.
        const parsed = tryParse(bytes.toString('utf8'));
        if (parsed === null) throw invalidReply(target, 'the reply body is not JSON');
        return {
          status: response.status,
          headers: relayedResponseHeaders(response.headers),
          body: bytes,
          usage: replyUsage(endpoint.id, parsed),
          outputTokens: () => countTokensAsync(replyText(endpoint.id, parsed)),
          replyId: replyId(endpoint.id, parsed),
        };
      },
      streamHead(response) {
        const headers = relayedResponseHeaders(response.headers);
        if (!wire.framing.passthrough) headers['content-type'] = 'text/event-stream; charset=utf-8';
        return { status: response.status, headers };
      },
      stream: () => passthroughStream(endpoint.id, maxReplyBytes, wire.framing.passthrough ? null : wire.framing.newParser(maxReplyBytes), askUsage ? new UsageChunkRemover() : null),
    };
  },
};

/**
 * A native stream: the bytes go through as they came (re-framed as SSE for a provider whose stream
 * is not, e.g. AWS event-stream), a tap reading usage on the way; a filter may take out what the
 * gateway added to the request (the usage chunk it asked for).
 */
function passthroughStream(endpoint: EndpointId, maxEventBytes: number, reframe: FrameParser | null, filter: UsageChunkRemover | null): StreamCodec {
  const tap = usageTapFor(endpoint, maxEventBytes);
  /** Set when an event outgrew the cap: part of it has reached the client, so the error frame must start a new event. */
  let cut = false;
  return {
    complete: false,
    upstreamError: null,
    read: tap,
    push(chunk) {
      let out = chunk;
      if (reframe !== null) {
        let frames = '';
        for (const event of reframe.push(chunk)) frames += sseFrame(event.event, event.data);
        if (frames === '') return '';
        out = Buffer.from(frames);
      }
      try {
        tap.observe(out);
      } catch (error) {
        cut = true;
        throw error;
      }
      return filter === null ? out : filter.push(out);
    },
    flush: () => filter?.end() ?? '',
    // A blank line first ends the event cut short, so the error frame is read as an event of its own.
    interrupt: (error) => (cut ? '\n\n' : '') + streamErrorFrame(error, endpoint),
  };
}
