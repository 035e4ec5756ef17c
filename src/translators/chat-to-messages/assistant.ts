/**
 * An assistant message as Messages blocks, in the order Messages requires: signed thinking first,
 * then text, then tool calls.
 */
import { isObject, type Json } from '../../json';
import type { ToolNameMap } from '../tool-names';
import { textBlock, toolUse, type Block } from '../to-messages/blocks';
import { invalid, isSet, requireNonEmptyString, requireArray, requireRecord, requireString } from '../to-messages/fields';
import { textOnlyBlocks } from './content';

export function assistantBlocks(message: Json, param: string, toolNames: ToolNameMap): Block[] {
  if (isSet(message.function_call)) throw invalid(`${param}.function_call`, 'is the legacy form of a tool call; send tool_calls instead.');
  if (isSet(message.audio)) throw invalid(`${param}.audio`, 'refers to an audio reply, which this model cannot take back as input.');
  return [
    ...signedThinking(message, param),
    ...assistantText(message, param),
    ...toolUseBlocks(message.tool_calls, `${param}.tool_calls`, toolNames),
  ];
}

/**
 * The message's `thinking_blocks`, or else those of its first tool call: Tollgate returns them in
 * both places, and a client that keeps its tool calls whole but rebuilds the message sends them
 * back on the call.
 */
function signedThinking(message: Json, param: string): Block[] {
  if (isSet(message.thinking_blocks)) return thinkingBlocks(message.thinking_blocks, `${param}.thinking_blocks`);
  const first: unknown = Array.isArray(message.tool_calls) ? message.tool_calls[0] : undefined;
  if (!isObject(first) || !isSet(first.thinking_blocks)) return [];
  return thinkingBlocks(first.thinking_blocks, `${param}.tool_calls[0].thinking_blocks`);
}

/**
 * The signed reasoning a previous reply returned in `thinking_blocks`, sent back unchanged: in a tool
 * loop Messages rejects a turn whose thinking lost its signature. `reasoning_content` alone is
 * unsigned, so it cannot be sent back and is not read at all.
 */
function thinkingBlocks(value: unknown, param: string): Block[] {
  if (!isSet(value)) return [];
  return requireArray(value, param).flatMap((entry, k): Block[] => {
    const blockParam = `${param}[${k}]`;
    const block = requireRecord(entry, blockParam);
    if (block.type === 'redacted_thinking') return [{ type: 'redacted_thinking', data: requireString(block.data, `${blockParam}.data`) }];
    if (block.type !== 'thinking') throw invalid(`${blockParam}.type`, "must be 'thinking' or 'redacted_thinking'.");
    const thinking = requireString(block.thinking, `${blockParam}.thinking`);
    // A block without a signature was never signed by Anthropic; Messages would reject it.
    if (typeof block.signature !== 'string' || block.signature === '') return [];
    return [{ type: 'thinking', thinking, signature: block.signature }];
  });
}

/** Text and refusal parts; the `refusal` field speaks for a message whose content is empty. */
function assistantText(message: Json, param: string): Block[] {
  const blocks = textOnlyBlocks(message.content, `${param}.content`, true);
  if (blocks.length === 0 && typeof message.refusal === 'string' && message.refusal !== '') return [textBlock(message.refusal)];
  return blocks;
}

function toolUseBlocks(value: unknown, param: string, toolNames: ToolNameMap): Block[] {
  if (!isSet(value)) return [];
  return requireArray(value, param).map((entry, j) => toolUseBlock(entry, `${param}[${j}]`, toolNames));
}

function toolUseBlock(value: unknown, param: string, toolNames: ToolNameMap): Block {
  const call = requireRecord(value, param);
  if (isSet(call.type) && call.type !== 'function') {
    throw invalid(`${param}.type`, "must be 'function'; custom tool calls cannot be sent to this model.");
  }
  const id = requireNonEmptyString(call.id, `${param}.id`);
  const fn = requireRecord(call.function, `${param}.function`);
  const name = requireNonEmptyString(fn.name, `${param}.function.name`);
  return toolUse(id, name, fn.arguments, `${param}.function.arguments`, toolNames);
}
