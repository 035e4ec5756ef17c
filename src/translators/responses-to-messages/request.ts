/**
 * A Responses API request as an Anthropic Messages request (docs/protocols.md#responses-to-messages). The
 * Responses input list (messages, function calls, their outputs, reasoning items) becomes a `system` prompt
 * and alternating user/assistant turns; what Messages cannot express is a 400 naming the field; what only
 * tunes OpenAI's own service (`store`, `include`, `service_tier`, …) is not sent.
 */
import type { ModelConfig } from '../../config/types';
import type { Json } from '../../json';
import { invalid, isSet } from '../to-messages/fields';
import { messagesRequest, type MessagesDialect } from '../to-messages/request';
import type { TranslationContext } from '../types';
import { conversationFor } from './conversation';
import { expandedInput } from './expanded-input';
import { NO_REFERENCES } from './references';
import { formatFor, maxTokensFor, metadataFor, reasoningFor } from './output';
import { toolChoiceFor, toolsFor } from './tools';

/** How a Responses request spells each part of a Messages request; Responses has no stop sequences. */
const RESPONSES_DIALECT: MessagesDialect = {
  rejectUnmappable: rejectServerState,
  conversation: conversationFor,
  maxTokens: (body, model) => maxTokensFor(body.max_output_tokens, model),
  reasoning: (body, model, maxTokens) => reasoningFor(body.reasoning, model, maxTokens),
  effortParam: 'reasoning.effort',
  tools: (body, toolNames, searchUses) => toolsFor(body, toolNames, searchUses),
  toolChoice: toolChoiceFor,
  format: (body) => formatFor(body.text),
  metadata: metadataFor,
};

/** The Messages body for `ctx.clientBody`; see `messagesRequest` for the order of its keys. */
export function responsesToMessagesRequest(ctx: TranslationContext): Record<string, unknown> {
  const input = expandedInput(ctx.clientBody, ctx.references ?? NO_REFERENCES);
  return messagesRequest({ ...ctx, clientBody: { ...ctx.clientBody, input } }, RESPONSES_DIALECT);
}

/**
 * Fields that ask OpenAI to keep or fetch state on its side that Tollgate does not keep for Anthropic
 * models (its own recent responses it does keep: see minted.ts), so ignoring them would
 * answer a request the client never sent.
 */
function rejectServerState(body: Readonly<Json>, model: ModelConfig): void {
  if (isSet(body.conversation)) {
    throw invalid('conversation', `cannot be used with '${model.id}': Tollgate does not store conversations for Claude models. Send the whole conversation in input instead.`);
  }
  if (body.background === true) throw invalid('background', `cannot be true for '${model.id}': Tollgate answers Claude models only while the request is open.`);
  if (isSet(body.prompt)) throw invalid('prompt', `cannot be used with '${model.id}': stored prompts live with OpenAI; send the instructions and input themselves.`);
}
