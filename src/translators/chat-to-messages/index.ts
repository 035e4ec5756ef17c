/** Chat Completions clients on Anthropic Messages upstreams: `claude-*` through /v1/chat/completions. */
import { buildChatCompletion, ChatStreamWriter } from '../../protocols/openai-chat/writer';
import { composeTranslator } from '../compose';
import { errorFromAnthropicReply } from '../errors';
import { messagesReplyHasUsage, readMessagesReply } from '../readers/messages-reply';
import { MessagesStreamReader } from '../readers/messages-stream';
import { chatToMessagesRequest } from './request';

function includeUsage(body: Readonly<Record<string, unknown>>): boolean {
  const options = body.stream_options;
  return options !== null && typeof options === 'object' && (options as Record<string, unknown>).include_usage === true;
}

export const chatToMessages = composeTranslator({
  pair: 'chat-to-messages',
  upstreamEndpoint: 'messages',
  request: chatToMessagesRequest,
  readReply: (upstream, ctx) => ({
    turn: readMessagesReply(upstream, ctx.toolNames, ctx.model.id),
    hasUsage: messagesReplyHasUsage(upstream),
  }),
  writeReply: (turn) => buildChatCompletion(turn),
  newReader: (ctx) => new MessagesStreamReader(ctx.toolNames),
  newWriter: (ctx) => new ChatStreamWriter({ model: ctx.model.id, includeUsage: includeUsage(ctx.clientBody) }),
  error: errorFromAnthropicReply,
});
