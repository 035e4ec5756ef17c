/** Messages assistant turns as chat assistant messages, tool calls included. */
import { stringField, type Json } from '../../json';
import type { ToolNameMap } from '../tool-names';
import { blockList, invalid } from './fields';

/**
 * An assistant turn. Text blocks of one turn are pieces of one answer (split by citations or tool
 * calls), so they are joined as written. Thinking is dropped: OpenAI models cannot take reasoning
 * back, and it was only ever for the client to return to Anthropic.
 */
export function assistantMessages(content: unknown, param: string, toolNames: ToolNameMap): Json[] {
  if (typeof content === 'string') return [{ role: 'assistant', content }];
  const texts: string[] = [];
  const toolCalls: Json[] = [];
  blockList(content, `${param}.content`).forEach((block, j) => {
    const at = `${param}.content[${j}]`;
    if (block.type === 'text') texts.push(stringField(block.text));
    else if (block.type === 'tool_use') toolCalls.push(toolCall(block, at, toolNames));
    else if (block.type !== 'thinking' && block.type !== 'redacted_thinking') {
      throw invalid(at, `'${String(block.type)}' blocks cannot be sent to this model.`);
    }
  });
  // A turn that held only reasoning says nothing chat can carry.
  if (texts.length === 0 && toolCalls.length === 0) return [];
  const message: Json = { role: 'assistant', content: texts.length > 0 ? texts.join('') : null };
  if (toolCalls.length > 0) message.tool_calls = toolCalls;
  return [message];
}

function toolCall(block: Json, param: string, toolNames: ToolNameMap): Json {
  if (typeof block.id !== 'string') throw invalid(`${param}.id`, 'must be a string.');
  if (typeof block.name !== 'string') throw invalid(`${param}.name`, 'must be a string.');
  return {
    id: block.id,
    type: 'function',
    function: { name: toolNames.upstream(block.name), arguments: JSON.stringify(block.input ?? {}) },
  };
}
