/**
 * An Anthropic Messages request as an OpenAI Chat Completions request (docs/protocols.md#messages-to-chat), for
 * Messages clients served by an OpenAI-family model. What chat cannot express and whose loss would
 * change the answer is refused with a 400 naming the field; what only tunes Anthropic's service
 * (cache_control, service_tier, speed, top_k…) is dropped.
 */
import type { TranslationContext } from '../types';
import { chatMessages } from './messages';
import { responseFormatFields, samplingFields } from './output';
import { reasoningFields } from './reasoning';
import { toolFields } from './tools';
import { refuseUnmappableFields } from './unmappable';

/** The chat request for the client's Messages request; implements [Translator.request] for messages-to-chat. */
export function messagesToChatRequest(ctx: TranslationContext): Record<string, unknown> {
  const body = ctx.clientBody;
  refuseUnmappableFields(body);
  return {
    model: ctx.upstreamModel,
    messages: chatMessages(body, ctx.toolNames),
    ...toolFields(body, ctx.toolNames),
    ...samplingFields(body),
    ...reasoningFields(body, ctx.model),
    ...responseFormatFields(body),
    ...(body.stream === true && { stream: true, stream_options: { include_usage: true } }),
  };
}
