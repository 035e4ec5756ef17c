/**
 * The parts of a translator that only depend on its upstream being Anthropic Messages: how a whole
 * reply and a stream are read, and how an error reply is mapped. Each `*-to-messages` pair adds its
 * own request mapper and client-side writer.
 */
import type { TranslatorParts } from '../compose';
import { errorFromAnthropicReply } from '../errors';
import { messagesReplyHasUsage, readMessagesReply } from '../readers/messages-reply';
import { MessagesStreamReader } from '../readers/messages-stream';

export const MESSAGES_UPSTREAM = {
  target: 'anthropic',
  upstreamEndpoint: 'messages',
  readReply: (upstream, ctx) => ({
    turn: readMessagesReply(upstream, ctx.toolNames, ctx.model.id),
    hasUsage: messagesReplyHasUsage(upstream),
  }),
  newReader: (ctx) => new MessagesStreamReader(ctx.toolNames),
  error: errorFromAnthropicReply,
} as const satisfies Pick<TranslatorParts, 'target' | 'upstreamEndpoint' | 'readReply' | 'newReader' | 'error'>;
