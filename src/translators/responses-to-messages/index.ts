/** Responses API clients on Anthropic Messages upstreams: `claude-*` through /v1/responses. */
import { buildResponse, responsesRequestEcho, ResponsesStreamWriter } from '../../protocols/openai-responses/writer';
import { composeTranslator } from '../compose';
import { MESSAGES_UPSTREAM } from '../to-messages/upstream';
import { responsesToMessagesRequest } from './request';

export const responsesToMessages = composeTranslator({
  ...MESSAGES_UPSTREAM,
  pair: 'responses-to-messages',
  request: responsesToMessagesRequest,
  writeReply: (turn, ctx) => buildResponse(turn, responsesRequestEcho(ctx.clientBody)),
  newWriter: (ctx) => new ResponsesStreamWriter({ model: ctx.model.id, echo: responsesRequestEcho(ctx.clientBody) }),
});
