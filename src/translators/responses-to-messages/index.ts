/** Responses API clients on Anthropic Messages upstreams: `claude-*` through /v1/responses. */
import { buildResponse, responsesRequestEcho, ResponsesStreamWriter } from '../../protocols/openai-responses/writer';
import { composeTranslator } from '../compose';
import { errorFromAnthropicReply } from '../errors';
import { messagesReplyHasUsage, readMessagesReply } from '../readers/messages-reply';
import { MessagesStreamReader } from '../readers/messages-stream';
import { responsesToMessagesRequest } from './request';

export const responsesToMessages = composeTranslator({
  pair: 'responses-to-messages',
  upstreamEndpoint: 'messages',
  request: responsesToMessagesRequest,
  readReply: (upstream, ctx) => ({
    turn: readMessagesReply(upstream, ctx.toolNames, ctx.model.id),
    hasUsage: messagesReplyHasUsage(upstream),
  }),
  writeReply: (turn, ctx) => buildResponse(turn, responsesRequestEcho(ctx.clientBody)),
  newReader: (ctx) => new MessagesStreamReader(ctx.toolNames),
  newWriter: (ctx) => new ResponsesStreamWriter({ model: ctx.model.id, echo: responsesRequestEcho(ctx.clientBody) }),
  error: errorFromAnthropicReply,
});
