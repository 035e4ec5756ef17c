/** Function calls, their outputs and reasoning items as the Messages blocks they stand for. */
import type { Json } from '../../json';
import { joinNamespace } from '../../protocols/openai-responses/namespaced-name';
import { REDACTED_THINKING_PREFIX } from '../../protocols/openai-responses/writer';
import type { ToolNameMap } from '../tool-names';
import { toolResult, toolUse, type Block } from '../to-messages/blocks';
import { isSet, requireNonEmptyString, requireArray, requireRecord, requireString } from '../to-messages/fields';
import { contentBlocks } from './content';

/** A `function_call` item as a `tool_use` block. */
export function toolUseBlock(item: Json, param: string, toolNames: ToolNameMap): Block {
  const callId = requireNonEmptyString(item.call_id, `${param}.call_id`);
  const name = requireNonEmptyString(item.name, `${param}.name`);
  // A call to a function of a namespace tool goes by the flat name its declaration was given.
  const flat = isSet(item.namespace) ? joinNamespace(requireNonEmptyString(item.namespace, `${param}.namespace`), name) : name;
  return toolUse(callId, flat, item.arguments, `${param}.arguments`, toolNames);
}

/** A `function_call_output` item as a `tool_result` block. */
export function toolResultBlock(item: Json, param: string): Block {
  const toolUseId = requireNonEmptyString(item.call_id, `${param}.call_id`);
  const output = item.output;
  const content = typeof output === 'string' ? output : outputBlocks(output, `${param}.output`);
  return toolResult(toolUseId, content);
}

/** A function's output given as parts: text, images and PDFs are all things a tool_result can hold. */
function outputBlocks(value: unknown, param: string): Block[] {
  if (!isSet(value)) return [];
  return contentBlocks(value, param, 'user');
}

/**
 * A reasoning item as the thinking block it came from. Only Tollgate's own items carry a signature
 * in `encrypted_content` (see the Responses writer); without one there is nothing Messages would
 * accept back, so the item is dropped. Tollgate writes the whole thinking text as one summary part,
 * so joining the parts restores it exactly.
 */
export function thinkingBlocks(item: Json, param: string): Block[] {
  const encrypted = item.encrypted_content;
  if (!isSet(encrypted) || encrypted === '') return [];
  const signature = requireString(encrypted, `${param}.encrypted_content`);
  if (signature.startsWith(REDACTED_THINKING_PREFIX)) return [{ type: 'redacted_thinking', data: signature.slice(REDACTED_THINKING_PREFIX.length) }];
  const summary = isSet(item.summary) ? requireArray(item.summary, `${param}.summary`) : [];
  const texts = summary.map((entry, k) => requireString(requireRecord(entry, `${param}.summary[${k}]`).text, `${param}.summary[${k}].text`));
  return [{ type: 'thinking', thinking: texts.join(''), signature }];
}
