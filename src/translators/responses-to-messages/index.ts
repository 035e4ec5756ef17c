/** Responses API clients on Anthropic Messages upstreams: `claude-*` through /v1/responses. */
import type { Json } from '../../json';
import type { ResponseObject } from '../../protocols/openai-responses/response-object';
import { buildResponse, responsesRequestEcho, ResponsesStreamWriter } from '../../protocols/openai-responses/writer';
import { composeTranslator } from '../compose';
import type { TranslationContext } from '../types';
import { MESSAGES_UPSTREAM } from '../to-messages/upstream';
import { ownInput } from './expanded-input';
import { NO_REFERENCES } from './references';
import { responsesToMessagesRequest } from './request';

export const responsesToMessages = composeTranslator({
  ...MESSAGES_UPSTREAM,
  pair: 'responses-to-messages',
  request: responsesToMessagesRequest,
  writeReply: (turn, ctx) => remembered(buildResponse(turn, echoFor(ctx.clientBody)), ctx),
  newWriter: (ctx) =>
    new ResponsesStreamWriter({
      model: ctx.model.id,
      echo: echoFor(ctx.clientBody),
      onFinished: (response) => remembered(response, ctx),
    }),
});

/** The echoed request fields; `store` says whether this response is kept (it is unless the client said false). */
function echoFor(body: Readonly<Json>) {
  return { ...responsesRequestEcho(body), store: body.store !== false };
}

/** Keeps a response the client did not ask to go unstored, so later requests can refer to it. */
function remembered(response: ResponseObject, ctx: TranslationContext): ResponseObject {
  if (!response.store) return response;
  const body = ctx.clientBody;
  const references = ctx.references ?? NO_REFERENCES;
  let input: Json[];
  try {
    input = ownInput(body, references);
  } catch {
    // A reference the request carried was not found (the request was refused before this); the response stands on its own.
    input = [];
  }
  const previous = typeof body.previous_response_id === 'string' ? body.previous_response_id : null;
  references.remember(response.id, { previous, input, output: response.output as unknown as Json[] });
  return response;
}
