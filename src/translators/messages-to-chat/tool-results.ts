/** Messages `tool_result` blocks as chat `tool` messages. */
import { stringField, type Json } from '../../json';
import { userPart } from './content';
import { blockList, invalid, isAbsent } from './fields';

/** The `tool` message for one tool result, and what it cannot carry. */
export interface ToolResultMessages {
  readonly message: Json;
  /** Parts a `tool` message cannot carry (images, PDFs), for a user message after the tool messages. */
  readonly attachments: Json[];
}

/** A `tool_result` block as a `tool` message; its text parts stay in it, the rest become attachments. */
export function toolResult(block: Json, param: string): ToolResultMessages {
  if (typeof block.tool_use_id !== 'string') throw invalid(`${param}.tool_use_id`, 'must be a string.');
  const attachments: Json[] = [];
  let content: string | Json[];
  if (isAbsent(block.content) || typeof block.content === 'string') {
    content = stringField(block.content);
  } else {
    const texts: Json[] = [];
    blockList(block.content, `${param}.content`).forEach((inner, k) => {
      const part = userPart(inner, `${param}.content[${k}]`);
      (part.type === 'text' ? texts : attachments).push(part);
    });
    content = texts.length > 0 ? texts : '';
  }
  if (block.is_error === true) content = markedAsError(content);
  return { message: { role: 'tool', tool_call_id: block.tool_use_id, content }, attachments };
}

/** Chat has no error flag on tool results, so the failure is said in words the model reads. */
function markedAsError(content: string | Json[]): string | Json[] {
  if (typeof content === 'string') return content === '' ? 'Error' : `Error: ${content}`;
  const [first, ...rest] = content;
  return [{ type: 'text', text: `Error: ${stringField(first.text)}` }, ...rest];
}
