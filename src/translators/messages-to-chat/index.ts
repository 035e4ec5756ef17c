/** Anthropic Messages clients (Claude Code) on OpenAI Chat Completions upstreams. */
import { buildMessage, MessagesStreamWriter } from '../../protocols/anthropic-messages/writer';
import { composeTranslator } from '../compose';
import { errorFromOpenAIReply } from '../errors';
import { chatReplyHasUsage, readChatReply } from '../readers/chat-reply';
import { ChatStreamReader } from '../readers/chat-stream';
import { messagesToChatRequest } from './request';

export const messagesToChat = composeTranslator({
  pair: 'messages-to-chat',
  target: 'openai',
  upstreamEndpoint: 'chat',
  request: messagesToChatRequest,
  readReply: (upstream, ctx) => ({
    turn: readChatReply(upstream, ctx.toolNames, ctx.model.id),
    hasUsage: chatReplyHasUsage(upstream),
  }),
  writeReply: (turn) => buildMessage(turn),
  newReader: (ctx) => new ChatStreamReader(ctx.toolNames),
  newWriter: (ctx) => new MessagesStreamWriter({ model: ctx.model.id }),
  error: errorFromOpenAIReply,
});
