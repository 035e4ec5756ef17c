/**
 * An OpenAI Chat Completions request as an Anthropic Messages request (docs/protocols.md#chat-to-messages).
 * What Messages can express is mapped; what would change the answer and cannot be mapped is a 400 naming the
 * field; what only tunes OpenAI's own service (`seed`, `store`, `metadata`, …) is not sent.
 */
import type { Json } from '../../json';
import { invalid, isSet, requireRecord } from '../to-messages/fields';
import { messagesRequest, type MessagesDialect } from '../to-messages/request';
import { stopSequencesFor } from '../to-messages/sampling';
import type { TranslationContext } from '../types';
import { conversationFor } from './messages';
import { formatFor, maxTokensFor, reasoningFor } from './output';
import { toolChoiceFor, toolsFor } from './tools';
import { locationAt, webSearchTool } from '../to-messages/web-search';
import { rejectUnmappable } from './unmappable';

/** How a Chat Completions request spells each part of a Messages request. */
const CHAT_DIALECT: MessagesDialect = {
  rejectUnmappable: (body) => rejectUnmappable(body),
  conversation: (body, toolNames) => conversationFor(body.messages, toolNames),
  maxTokens: maxTokensFor,
  reasoning: reasoningFor,
  effortParam: 'reasoning_effort',
  tools: (body, toolNames, searchUses) => withWebSearch(toolsFor(body.tools, toolNames), body.web_search_options, searchUses),
  toolChoice: toolChoiceFor,
  stopSequences: (body) => stopSequencesFor(body.stop),
  format: (body) => formatFor(body.response_format),
  metadata: (body) => metadataFor(body.user),
};

/** The Messages body for `ctx.clientBody`; see `messagesRequest` for the order of its keys. */
export function chatToMessagesRequest(ctx: TranslationContext): Record<string, unknown> {
  return messagesRequest(ctx, CHAT_DIALECT);
}

/** `user` identifies the end user to the upstream, which Messages takes as `metadata.user_id`. */
function metadataFor(user: unknown): Json | undefined {
  if (!isSet(user) || user === '') return undefined;
  if (typeof user !== 'string') throw invalid('user', 'must be a string.');
  return { user_id: user };
}

/**
 * `web_search_options` adds Claude's web search to the tools, for up to `uses` searches (chat has no
 * cap of its own). Its approximate location carries over; `search_context_size` has no counterpart.
 */
function withWebSearch(tools: Json[] | undefined, options: unknown, uses: number): Json[] | undefined {
  if (!isSet(options)) return tools;
  const search = requireRecord(options, 'web_search_options');
  const location = locationAt(search.user_location, 'web_search_options.user_location');
  const param = 'web_search_options.user_location.approximate';
  const tool = webSearchTool({ location: location === undefined ? undefined : locationAt(location.approximate, param), locationParam: param }, uses);
  return [...(tools ?? []), tool];
}
