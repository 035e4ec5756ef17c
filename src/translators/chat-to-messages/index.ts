/** Chat Completions clients on Anthropic Messages upstreams: `claude-*` through /v1/chat/completions. */
import { buildChatCompletion, ChatStreamWriter } from '../../protocols/openai-chat/writer';
import { composeTranslator } from '../compose';
import { MESSAGES_UPSTREAM } from '../to-messages/upstream';
import { chatToMessagesRequest } from './request';

function includeUsage(body: Readonly<Record<string, unknown>>): boolean {
  const options = body.stream_options;
  return options !== null && typeof options === 'object' && (options as Record<string, unknown>).include_usage === true;
}

export const chatToMessages = composeTranslator({
  ...MESSAGES_UPSTREAM,
  pair: 'chat-to-messages',
  request: chatToMessagesRequest,
  writeReply: (turn) => buildChatCompletion(turn),
  newWriter: (ctx) => new ChatStreamWriter({ model: ctx.model.id, includeUsage: includeUsage(ctx.clientBody) }),
});
