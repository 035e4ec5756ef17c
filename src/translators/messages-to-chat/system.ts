/** Messages system prompts, top-level or mid-conversation, as chat system messages. */
import { stringField, type Json } from '../../json';
import { blockList, invalid, isAbsent } from './fields';

/**
 * A system prompt as one chat system message; none for an empty one. Blocks are separate sections
 * of the prompt, so they are joined with a blank line rather than run together.
 */
export function systemMessage(content: unknown, param: string): Json | null {
  if (isAbsent(content)) return null;
  const text = typeof content === 'string' ? content : textBlocks(content, param).join('\n\n');
  return text === '' ? null : { role: 'system', content: text };
}

/** The texts of a block list that may hold only text blocks (system prompts). */
function textBlocks(content: unknown, param: string): string[] {
  return blockList(content, param).map((block, i) => {
    if (block.type !== 'text') throw invalid(`${param}[${i}]`, `only text blocks are allowed here; got '${String(block.type)}'.`);
    return stringField(block.text);
  });
}
