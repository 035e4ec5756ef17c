/**
 * One translated attempt: the client's request rewritten in the provider's protocol, and the
 * provider's answer (whole, streamed or an error) judged, then rewritten back in the client's. As with
 * native attempts, nothing reaches the client before the answer is committed.
 */
import { tryParse } from '../json';
import type { GatewayContext } from '../kernel/context';
import { need } from '../kernel/need';
import { GatewayError } from '../kernel/errors';
import { countTokensAsync } from '../billing/tokenizer';
import { replyText } from '../protocols/output-text';
import type { Target } from '../routing/resolve';
import { translationContext, type TranslationContext, type Translator } from '../translators';
import { wireOf, type UpstreamCall } from '../wire';
import { AttemptFailure, discard, retryAfterMs, type Commit } from './attempt';
import type { AttemptSignal } from './attempt-abort';
import { attemptFailure } from './failures';
import { readFirstEvent } from './first-event';
import { translatedRequestHeaders, upstreamRequestIdOf } from './headers';
import { credentialsRefused, invalidReply, redirected, streamMismatch } from './native-attempt';
import { MAX_ERROR_BODY_BYTES, MAX_PLAIN_BODY_BYTES, readBody, scrubbed } from './read-body';
import { failureFromErrorEvent } from './stream-error';
import { TranslatingRelay } from './translating-relay';
import type { UpstreamClient, UpstreamResponse } from './types';

/**
 * The translated request body for `target`; throws the 400 that names an unmappable field. Called
 * before any attempt is made, so a request that cannot be translated never reaches a provider.
 */
function translateRequest(ctx: GatewayContext, target: Target, translator: Translator): { context: TranslationContext; call: UpstreamCall; body: Buffer } {
  const request = need(ctx, 'request');
  const context = translationContext(request.model, target, request.body);
  const call = { endpoint: translator.upstreamEndpoint, upstreamModel: target.route.upstream_model, stream: request.stream, beta: false };
  return { context, call, body: wireOf(target.provider).translatedBody(translator.request(context), call) };
}

export async function attemptTranslated(
  ctx: GatewayContext,
  target: Target,
  client: UpstreamClient,
  translator: Translator,
  signal: AttemptSignal,
): Promise<Commit> {
  const request = need(ctx, 'request');
  const { provider } = target;
  const wire = wireOf(provider);
  const { context, call, body } = translateRequest(ctx, target, translator);
  try {
    const response = await client.send({
      endpoint: translator.upstreamEndpoint,
      path: wire.path(call, provider),
      headers: translatedRequestHeaders(provider, ctx.state.clientRequestId ?? ctx.state.requestId),
      body,
      signal,
    });
    if (response.status === 401 || response.status === 403) throw credentialsRefused(target, response);
    if (response.status >= 400) {
      const bytes = scrubbed(await readBody(response.body, MAX_ERROR_BODY_BYTES, 'cut'), provider.api_key);
      // In the family's own shape first (Bedrock's and Google's errors), then in the client's.
      const { status, body: familyBytes } = wire.errorReply(response.status, bytes, response.headers);
      throw new AttemptFailure('status', status, translator.error(status, familyBytes, response.headers), retryAfterMs(response.headers));
    }
    if (response.status >= 300) throw redirected(target, response);
    if (wire.framing.isStream(response.headers) !== request.stream) throw streamMismatch(target, response, request.stream);
    return request.stream ? await streamAnswer(target, translator, context, response) : await plainAnswer(target, translator, context, response);
  } catch (error) {
    throw attemptFailure(error, provider.id, signal);
  }
}

async function plainAnswer(target: Target, translator: Translator, context: TranslationContext, response: UpstreamResponse): Promise<Commit> {
  const bytes = await readBody(response.body, MAX_PLAIN_BODY_BYTES, 'fail');
  const parsed = tryParse(bytes.toString('utf8'));
  if (parsed === null) throw invalidReply(target, 'the reply body is not JSON');
  let reply: ReturnType<Translator['reply']>;
  try {
    reply = translator.reply(parsed, context);
  } catch (error) {
    if (error instanceof GatewayError) throw new AttemptFailure('invalid', null, error);
    throw error;
  }
  return {
    upstreamRequestId: upstreamRequestIdOf(response.headers),
    commit(ctx, report) {
      ctx.status = 200;
      ctx.body = reply.body;
      report({ kind: 'delivered' }, reply.usage, 200, () => countTokensAsync(replyText(translator.upstreamEndpoint, parsed)));
    },
  };
}

async function streamAnswer(target: Target, translator: Translator, context: TranslationContext, response: UpstreamResponse): Promise<Commit> {
  const { framing, isErrorEvent } = wireOf(target.provider);
  const head = await readFirstEvent(response.body, framing.newParser());
  if (head.first === null) throw invalidReply(target, 'the stream ended before its first event');
  if (isErrorEvent(head.first)) {
    discard(response.body);
    const failure = failureFromErrorEvent(head.first);
    throw failure;
  }
  return {
    upstreamRequestId: upstreamRequestIdOf(response.headers),
    commit(ctx, report) {
      ctx.status = 200;
      ctx.set('content-type', 'text/event-stream; charset=utf-8');
      ctx.set('cache-control', 'no-cache');
      ctx.set('x-accel-buffering', 'no');
      ctx.body = new TranslatingRelay(response.body, translator.stream(context), {
        head: head.chunks,
        providerId: target.provider.id,
        upstreamEndpoint: translator.upstreamEndpoint,
        frames: framing.newParser(),
        onEnd: (kind, usage, outputTokens) => report(kind, usage, 200, outputTokens),
      });
      // The headers leave with the first translated event in one write (no separate flushHeaders()).
    },
  };
}
