/** The Messages conversation (system prompt and turns) as the chat `messages` list. */
import { object, type Json } from '../../json';
import type { ToolNameMap } from '../tool-names';
import { assistantMessages } from './assistant';
import { userPart } from './content';
import { blockList, invalid } from './fields';
import { systemMessage } from './system';
import { toolResult } from './tool-results';

/** The chat messages for a request: the system prompt first, then each turn in order. */
export function chatMessages(body: Json, toolNames: ToolNameMap): Json[] {
  const messages: Json[] = [];
  const system = systemMessage(body.system, 'system');
  if (system !== null) messages.push(system);
  if (!Array.isArray(body.messages)) throw invalid('messages', 'must be an array of messages.');
  body.messages.forEach((message, i) => messages.push(...turnMessages(object(message), `messages[${i}]`, toolNames)));
  return messages;
}

function turnMessages(message: Json, param: string, toolNames: ToolNameMap): Json[] {
  switch (message.role) {
    case 'user':
      return userMessages(message.content, param);
    case 'assistant':
      return assistantMessages(message.content, param, toolNames);
    case 'system': {
      // Claude Code sends mid-conversation system turns; chat keeps them where they stand.
      const system = systemMessage(message.content, `${param}.content`);
      return system === null ? [] : [system];
    }
    default:
      throw invalid(`${param}.role`, "must be 'user', 'assistant' or 'system'.");
  }
}

/**
 * A user turn. Chat requires the answers to an assistant's tool calls to follow it directly, so the
 * turn's tool results become `tool` messages placed before the rest of its content; images a tool
 * returned cannot go in a `tool` message and follow in a user message of their own.
 */
function userMessages(content: unknown, param: string): Json[] {
  if (typeof content === 'string') return [{ role: 'user', content }];
  const toolMessages: Json[] = [];
  const toolAttachments: Json[] = [];
  const parts: Json[] = [];
  blockList(content, `${param}.content`).forEach((block, j) => {
    const at = `${param}.content[${j}]`;
    if (block.type === 'tool_result') {
      const result = toolResult(block, at);
      toolMessages.push(result.message);
      toolAttachments.push(...result.attachments);
    } else {
      parts.push(userPart(block, at));
    }
  });
  const messages = [...toolMessages];
  if (toolAttachments.length > 0) messages.push({ role: 'user', content: toolAttachments });
  if (parts.length > 0) messages.push({ role: 'user', content: parts });
  return messages;
}
