/** Responses API clients on Anthropic Messages upstreams: `claude-*` through /v1/responses. */
import type { Json } from '../../json';
import type { ResponseObject } from '../../protocols/openai-responses/response-object';
import { buildResponse, responsesRequestEcho, ResponsesStreamWriter } from '../../protocols/openai-responses/writer';
import { composeTranslator } from '../compose';
import { MESSAGES_UPSTREAM } from '../to-messages/upstream';
import { ownInput } from './expanded-input';
import { mintedResponses } from './minted';
import { responsesToMessagesRequest } from './request';

export const responsesToMessages = composeTranslator({
  ...MESSAGES_UPSTREAM,
  pair: 'responses-to-messages',
  request: responsesToMessagesRequest,
  writeReply: (turn, ctx) => remembered(buildResponse(turn, echoFor(ctx.clientBody)), ctx.clientBody),
  newWriter: (ctx) =>
    new ResponsesStreamWriter({
      model: ctx.model.id,
      echo: echoFor(ctx.clientBody),
      onFinished: (response) => remembered(response, ctx.clientBody),
    }),
});

/** The echoed request fields; `store` says whether this response is kept (it is unless the client said false). */
function echoFor(body: Readonly<Json>) {
  return { ...responsesRequestEcho(body), store: body.store !== false };
}

/** Keeps a response the client did not ask to go unstored, so later requests can refer to it. */
function remembered(response: ResponseObject, body: Readonly<Json>): ResponseObject {
  if (!response.store) return response;
  let input: Json[];
  try {
    input = ownInput(body);
  } catch {
    // An item the request referred to expired since it was read; the response stands on its own.
    input = [];
  }
  const previous = typeof body.previous_response_id === 'string' ? body.previous_response_id : null;
  mintedResponses.remember(response.id, previous, input, response.output as unknown as Json[]);
  return response;
}
