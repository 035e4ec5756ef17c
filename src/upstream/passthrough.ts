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
import { countTokensAsync } from '../billing/tokenizer';
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
import { invalidReply, type AttemptLeg, type RouteTranslator, type StreamCodec } from './attempt';
import { relayedResponseHeaders, upstreamRequestHeaders } from './headers';

export const PASSTHROUGH: RouteTranslator = {
  begin(ctx: GatewayContext, target: Target): AttemptLeg {
    const { endpoint, requestId } = ctx.state;
    const request = need(ctx, 'request');
    const { provider, route } = target;
    const wire = wireOf(provider);
    // Billing needs the provider's own counts of a chat stream (reasoning is billed, never shown).
    const askUsage = endpoint.id === 'chat' && needsUsageRequested(request.body);
    const native = wire.nativeBody({ request, endpoint: endpoint.id, upstreamModel: route.upstream_model, clientHeaders: ctx.headers });
    return {
      call: { endpoint: endpoint.id, upstreamModel: route.upstream_model, stream: request.stream, beta: ctx.query.beta === 'true' },
      headers: upstreamRequestHeaders(ctx.headers, provider, ctx.state.clientRequestId ?? requestId),
      body: askUsage ? withUsageRequested(native, request.body) : native,
      error(reply, received, headers) {
        const relayed = relayedResponseHeaders(headers);
        if (reply.body !== received) relayed['content-type'] = 'application/json';
        return { status: reply.status, headers: relayed, body: reply.body };
      },
      reply(received, response) {
        const bytes = wire.plainReply(endpoint.id, received);
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
      stream: () => passthroughStream(endpoint.id, wire.framing.passthrough ? null : wire.framing.newParser(), askUsage ? new UsageChunkRemover() : null),
    };
  },
};

/**
 * A native stream: the bytes go through as they came (re-framed as SSE for a provider whose stream
 * is not, e.g. AWS event-stream), a tap reading usage on the way; a filter may take out what the
 * gateway added to the request (the usage chunk it asked for).
 */
function passthroughStream(endpoint: EndpointId, reframe: FrameParser | null, filter: UsageChunkRemover | null): StreamCodec {
  const tap = usageTapFor(endpoint);
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
      tap.observe(out);
      return filter === null ? out : filter.push(out);
    },
    flush: () => filter?.end() ?? '',
    interrupt: (error) => streamErrorFrame(error, endpoint),
  };
}
