/**
 * A route of another protocol: the client's request rewritten in the provider's by a translator, and
 * the provider's answer (whole, streamed or an error) rewritten back in the client's.
 */
import { tryParse } from '../json';
import type { GatewayContext } from '../kernel/context';
import { GatewayError } from '../kernel/errors';
import { need } from '../kernel/need';
import { countTokensAsync } from '../billing/tokenizer';
import { OutputTokenCount } from '../protocols/output-count';
import { replyText } from '../protocols/output-text';
import type { Target } from '../routing/resolve';
import { translationContext, type Translator } from '../translators';
import type { ResponseReferences } from '../translators/responses-to-messages/references';
import type { StreamTranslation } from '../translators/types';
import { wireOf } from '../wire';
import type { FrameParser } from '../wire/types';
import { AttemptFailure, invalidReply, type AttemptLeg, type RouteTranslator, type StreamCodec } from './attempt';
import { translatedRequestHeaders } from './headers';

const SSE = 'text/event-stream; charset=utf-8';

/** The route translator of each translator without references, made once. */
const ROUTES = new WeakMap<Translator, RouteTranslator>();

/** `references`: the minted responses a Responses request refers to, read for its account. */
export function translating(translator: Translator, references?: ResponseReferences): RouteTranslator {
  if (references !== undefined) return { begin: (ctx, target) => translatedLeg(ctx, target, translator, references) };
  let route = ROUTES.get(translator);
  if (route === undefined) ROUTES.set(translator, (route = { begin: (ctx, target) => translatedLeg(ctx, target, translator) }));
  return route;
}

function translatedLeg(ctx: GatewayContext, target: Target, translator: Translator, references?: ResponseReferences): AttemptLeg {
  const request = need(ctx, 'request');
  const { provider } = target;
  const wire = wireOf(provider);
  // Tool names are mapped per attempt: each upstream has its own limits.
  const context = translationContext(request.model, target, request.body, ctx.state.config.plugins.translate.web_search_max_uses, references);
  const call = { endpoint: translator.upstreamEndpoint, upstreamModel: target.route.upstream_model, stream: request.stream, beta: false };
  return {
    call,
    headers: translatedRequestHeaders(provider, ctx.state.clientRequestId ?? ctx.state.requestId),
    body: wire.translatedBody(translator.request(context), call),
    // In the family's own shape first (Bedrock's and Google's errors), then in the client's.
    error: (reply, _received, headers) => translator.error(reply.status, reply.body, headers),
    reply(received) {
      const parsed = tryParse(received.toString('utf8'));
      if (parsed === null) throw invalidReply(target, 'the reply body is not JSON');
      let reply: ReturnType<Translator['reply']>;
      try {
        reply = translator.reply(parsed, context);
      } catch (error) {
        if (error instanceof GatewayError) throw new AttemptFailure('invalid', null, error);
        throw error;
      }
      return {
        status: 200,
        headers: {},
        body: reply.body,
        usage: reply.usage,
        outputTokens: () => countTokensAsync(replyText(translator.upstreamEndpoint, parsed)),
        replyId: null,
      };
    },
    streamHead: () => ({ status: 200, headers: { 'content-type': SSE } }),
    stream: () => translatedStream(translator.stream(context), wire.framing.newParser(ctx.state.config.server.max_reply_bytes), new OutputTokenCount(translator.upstreamEndpoint)),
  };
}

/**
 * A translated stream: the upstream's events, split by its framing, each rewritten at once as the
 * client's frames. An event the translation refuses (what the client's protocol would have to repeat
 * has passed its bound: held-output.ts) throws, and the relay ends the stream with the error event;
 * the frames the same chunk's earlier events made go out first, and what was counted is what went out.
 */
function translatedStream(translation: StreamTranslation, frames: FrameParser, output: OutputTokenCount): StreamCodec {
  /** Frames made before an event of the same chunk threw: sent ahead of the error event. */
  let unsent = '';
  return {
    get complete() {
      return translation.ended;
    },
    get upstreamError() {
      return translation.upstreamError;
    },
    // The output is counted as it passes, in a bounded window: nothing read is kept.
    read: { result: () => translation.usage(), outputTokens: () => output.total(), behind: () => output.behind() },
    push(chunk) {
      let out = '';
      try {
        for (const event of frames.push(chunk)) {
          out += translation.event(event);
          output.add(event.data);
          if (translation.ended) break;
        }
      } catch (error) {
        unsent = out;
        throw error;
      }
      return out;
    },
    flush() {
      throw new Error('upstream ended the stream before its terminal event');
    },
    interrupt(error) {
      const before = unsent;
      unsent = '';
      return before + translation.interrupt(error);
    },
  };
}
