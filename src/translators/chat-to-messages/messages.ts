/**
 * The chat message list as a Messages `system` prompt and alternating user/assistant turns
 * (docs/protocols.md#chat-to-messages).
 */
import type { ToolNameMap } from '../tool-names';
import type { Block } from '../to-messages/blocks';
import { invalid, requireArray, requireRecord } from '../to-messages/fields';
import { normalisedTurns, type Conversation, type Turn, type TurnRules } from '../to-messages/turns';
import { assistantBlocks } from './assistant';
import { textOnlyBlocks, toolResultBlock, userContent } from './content';

/**
 * Tool results open their user turn. An assistant message already puts its own thinking first, and
 * merged assistant messages keep their blocks where they were.
 */
const CHAT_TURN_RULES: TurnRules = {
  firstKinds: { user: ['tool_result'], assistant: [] },
  emptyParam: 'messages',
  emptyProblem: 'must hold at least one user, assistant or tool message with content; system and developer messages alone leave nothing to answer.',
};

/** The system prompt (every system and developer message's text, in order) and the turns. */
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
  return { system, messages: normalisedTurns(turns, CHAT_TURN_RULES) };
}
