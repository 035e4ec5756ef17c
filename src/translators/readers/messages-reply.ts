/** A whole Anthropic Messages reply read into the neutral turn. */
import { isObject, stringField, type Json } from '../../json';
import { GatewayError } from '../../kernel/errors';
import { messagesUsage } from '../../protocols/anthropic-messages/usage';
import { NO_TOKENS } from '../../protocols/types';
import type { AssistantTurn, TurnPart } from '../../protocols/turn';
import type { ToolNameMap } from '../tool-names';
import { stopFromMessages } from './messages-stop';
import { citedSources, searchOutcome, searchQuery, WEB_SEARCH_TOOL_NAME } from './web-search';

function partOf(block: Json, toolNames: ToolNameMap): TurnPart | null {
  switch (block.type) {
    case 'text': {
      const citations = citedSources(block.citations);
      return { type: 'text', text: stringField(block.text), ...(citations.length > 0 && { citations }) };
    }
    case 'server_tool_use':
      if (block.name !== WEB_SEARCH_TOOL_NAME) return null;
      return { type: 'web_search', id: stringField(block.id), query: searchQuery(block.input), sources: [], error: null };
    case 'tool_use':
      return {
        type: 'tool_call',
        id: stringField(block.id),
        name: toolNames.client(stringField(block.name)),
        arguments: JSON.stringify(isObject(block.input) ? block.input : {}),
      };
    case 'thinking':
      return { type: 'thinking', text: stringField(block.thinking), signature: stringField(block.signature) };
    case 'redacted_thinking':
      return { type: 'redacted_thinking', data: stringField(block.data) };
    default:
      // Search results are read with their search (below); other blocks have no counterpart in OpenAI replies.
      return null;
  }
}

/** Reads a Messages `message` object; `model` is the id the client asked for. */
export function readMessagesReply(body: unknown, toolNames: ToolNameMap, model: string): AssistantTurn {
  if (!isObject(body) || body.type !== 'message' || !Array.isArray(body.content)) {
    throw new GatewayError('TOLLGATE_ERR_UPSTREAM_INVALID_RESPONSE', 'The upstream provider sent a reply that is not a Messages message.');
  }
  const parts: TurnPart[] = [];
  for (const block of body.content) {
    if (!isObject(block)) continue;
    if (block.type === 'web_search_tool_result') {
      withSearchOutcome(parts, block);
      continue;
    }
    const part = partOf(block, toolNames);
    if (part !== null) parts.push(part);
  }
  const usage = isObject(body.usage) ? messagesUsage(body.usage) : null;
  return {
    model,
    parts,
    stop: stopFromMessages(body.stop_reason),
    stopSequence: typeof body.stop_sequence === 'string' ? body.stop_sequence : null,
    usage: { ...NO_TOKENS, toolCalls: {}, ...usage, source: 'upstream' },
  };
}

/** Writes a search result block's pages (or error) on the search it answers. */
function withSearchOutcome(parts: TurnPart[], block: Json): void {
  const index = parts.findIndex((part) => part.type === 'web_search' && part.id === block.tool_use_id);
  const search = parts[index];
  if (search?.type !== 'web_search') return;
  parts[index] = { ...search, ...searchOutcome(block.content) };
}

/** Whether a Messages reply reported readable usage (billing must know when it has to estimate). */
export function messagesReplyHasUsage(body: unknown): boolean {
  return isObject(body) && isObject(body.usage) && messagesUsage(body.usage) !== null;
}
