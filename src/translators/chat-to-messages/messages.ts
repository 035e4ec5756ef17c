/**
 * The chat message list as a Messages `system` prompt and alternating user/assistant turns
 * (PROTOCOLS.md §4.1, "Message-list normalisation").
 */
import type { ToolNameMap } from '../tool-names';
import { assistantBlocks } from './assistant';
import { asBlocks, isToolResult, textBlock, textOnlyBlocks, toolResultBlock, userContent, type Block, type TurnContent } from './content';
import { invalid, requireArray, requireRecord } from './fields';

export interface Turn {
  readonly role: 'user' | 'assistant';
  readonly content: TurnContent;
}

export interface Conversation {
  /** Every system and developer message's text, in order; empty when there were none. */
  readonly system: Block[];
  readonly messages: Turn[];
}

/**
 * What opens a conversation the client started with an assistant turn (a greeting, say): Messages
 * wants the first turn to be the user's, and a neutral marker adds nothing the model could answer.
 */
const OPENING_USER_TEXT = '(continued)';

export function conversationFor(value: unknown, toolNames: ToolNameMap): Conversation {
  const system: Block[] = [];
  const turns: Turn[] = [];
  requireArray(value, 'messages').forEach((entry, i) => {
    const param = `messages[${i}]`;
    const message = requireRecord(entry, param);
    // `name` (a speaker's name) has no Messages field; it is not sent.
    switch (message.role) {
      case 'system':
      case 'developer':
        // Messages has one system prompt; both roles instruct the model, so both go there, in order.
        system.push(...textOnlyBlocks(message.content, `${param}.content`));
        return;
      case 'user':
        turns.push({ role: 'user', content: userContent(message.content, `${param}.content`) });
        return;
      case 'assistant':
        turns.push({ role: 'assistant', content: assistantBlocks(message, param, toolNames) });
        return;
      case 'tool':
        turns.push({ role: 'user', content: [toolResultBlock(message, param)] });
        return;
      case 'function':
        throw invalid(`${param}.role`, "'function' is the legacy form of a tool result; send a 'tool' message with tool_call_id.");
      default:
        throw invalid(`${param}.role`, `'${String(message.role)}' is not a chat message role.`);
    }
  });
  return { system, messages: normalised(turns) };
}

/** Drops empty turns, merges neighbours of one role, and makes the user speak first. */
function normalised(turns: readonly Turn[]): Turn[] {
  const merged = mergeSameRole(turns.filter((turn) => turn.content.length > 0)).map(toolResultsFirst);
  if (merged.length === 0) {
    throw invalid('messages', 'must hold at least one user, assistant or tool message with content; system and developer messages alone leave nothing to answer.');
  }
  if (merged[0].role === 'assistant') merged.unshift({ role: 'user', content: [textBlock(OPENING_USER_TEXT)] });
  return merged;
}

/**
 * Consecutive turns of one role become one turn, so a run of tool results (and any user text right
 * after them) answers the assistant's tool calls in a single user turn.
 */
function mergeSameRole(turns: readonly Turn[]): Turn[] {
  const merged: Turn[] = [];
  for (const turn of turns) {
    const previous = merged.at(-1);
    if (previous?.role !== turn.role) merged.push(turn);
    else merged[merged.length - 1] = { role: turn.role, content: [...asBlocks(previous.content), ...asBlocks(turn.content)] };
  }
  return merged;
}

/** Messages rejects a user turn with text before its tool results; the order among each kind is kept. */
function toolResultsFirst(turn: Turn): Turn {
  if (turn.role !== 'user' || typeof turn.content === 'string') return turn;
  const results = turn.content.filter(isToolResult);
  if (results.length === 0 || results.length === turn.content.length) return turn;
  return { role: 'user', content: [...results, ...turn.content.filter((block) => !isToolResult(block))] };
}
