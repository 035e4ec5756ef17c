/**
 * One translated attempt: the client's request is rewritten in the provider's protocol, and the
 * provider's answer (whole, streamed or an error) is rewritten back in the client's. Bookkeeping,
 * aborts and transport failures are shared with native forwarding (`exchange.ts`).
 */
import type { GatewayContext } from '../kernel/context';
import { GatewayError } from '../kernel/errors';
import { outputTextOf } from '../protocols/output-text';
import { ENDPOINTS } from '../protocols/types';
import { tryParse } from '../protocols/usage-json';
import { upstreamPath, type Target } from '../routing/resolve';
import { translationContext, type Translator } from '../translators';
import { failExchange, openExchange } from './exchange';
import { translatedRequestHeaders } from './headers';
import { isEventStream, MAX_ERROR_BODY_BYTES, MAX_PLAIN_BODY_BYTES, readBody, scrubbed } from './read-body';
import { TranslatingRelay } from './translating-relay';
import type { UpstreamClient } from './types';

/** Sends the translated request to `target` and sets the client's response in its own protocol. */
export async function forwardTranslated(ctx: GatewayContext, target: Target, client: UpstreamClient, translator: Translator): Promise<void> {
  const request = ctx.state.request!;
  const { provider } = target;
  const context = translationContext(request.model, target, request.body);
  // A request that cannot be expressed upstream fails here, before any exchange is opened.
  const body = Buffer.from(JSON.stringify(translator.request(context)));

  const exchange = openExchange(ctx, target);
  const { end } = exchange;
  try {
    const response = await client.send({
      endpoint: translator.upstreamEndpoint,
      path: upstreamPath(ENDPOINTS[translator.upstreamEndpoint]),
      headers: translatedRequestHeaders(provider, ctx.state.requestId),
      body,
      signal: exchange.signal,
    });
    if (response.status === 401 || response.status === 403) {
      response.body.resume();
      throw new GatewayError(
        'TOLLGATE_ERR_UPSTREAM_AUTH',
        `The upstream provider '${provider.id}' rejected the gateway's credentials; the operator has been told.`,
        { cause: new Error(`upstream answered ${response.status}`) },
      );
    }
    if (response.status >= 400) {
      const bytes = scrubbed(await readBody(response.body, MAX_ERROR_BODY_BYTES, 'cut'), provider.api_key);
      throw translator.error(response.status, bytes, response.headers);
    }
    if (isEventStream(response) !== request.stream) {
      response.body.resume();
      // A streaming client handed one JSON body reads zero chunks and no error (PROTOCOLS.md §0 fact 4).
      throw new GatewayError('TOLLGATE_ERR_UPSTREAM_INVALID_RESPONSE', `The upstream provider '${provider.id}' answered ${request.stream ? 'without' : 'with'} a stream, contrary to the request.`);
    }
    if (request.stream) {
      ctx.status = 200;
      ctx.set('content-type', 'text/event-stream; charset=utf-8');
      ctx.set('cache-control', 'no-cache');
      ctx.set('x-accel-buffering', 'no');
      ctx.body = new TranslatingRelay(response.body, translator.stream(context), {
        providerId: provider.id,
        upstreamEndpoint: translator.upstreamEndpoint,
        onEnd: (kind, usage, outputText) => end(kind, usage, 200, outputText),
      });
      // Commit the head now: a failure later can only end the stream with an error event.
      ctx.flushHeaders();
      return;
    }
    const bytes = await readBody(response.body, MAX_PLAIN_BODY_BYTES, 'fail');
    const { body: clientBody, usage } = translator.reply(tryParse(bytes.toString('utf8')), context);
    ctx.status = 200;
    ctx.body = clientBody;
    end({ kind: 'delivered' }, usage, 200, () => outputTextOf(translator.upstreamEndpoint, false, [bytes]));
  } catch (err) {
    failExchange(ctx, err, exchange, provider.id);
  }
}
