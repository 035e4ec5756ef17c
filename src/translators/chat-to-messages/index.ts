/** Chat Completions clients on Anthropic Messages upstreams: `claude-*` through /v1/chat/completions. */
import { object, type Json } from '../../json';
import { buildChatCompletion, ChatStreamWriter } from '../../protocols/openai-chat/writer';
import { composeTranslator } from '../compose';
import { MESSAGES_UPSTREAM } from '../to-messages/upstream';
import { chatToMessagesRequest } from './request';

function includeUsage(body: Readonly<Json>): boolean {
  return object(body.stream_options).include_usage === true;
}

export const chatToMessages = composeTranslator({
  ...MESSAGES_UPSTREAM,
  pair: 'chat-to-messages',
  request: chatToMessagesRequest,
  writeReply: (turn) => buildChatCompletion(turn),
  newWriter: (ctx) => new ChatStreamWriter({ model: ctx.model.id, includeUsage: includeUsage(ctx.clientBody) }),
});
