/**
 * Messages content blocks both OpenAI request shapes produce: text, inline PDFs, tool calls and their
 * results. Empty text is dropped because Messages rejects empty text blocks
 * (docs/protocols.md#chat-to-messages).
 */
import { isObject, type Json } from '../../json';
import type { ToolNameMap } from '../tool-names';
import { invalid, isSet, requireString } from './fields';

/** A Messages content block. */
export type Block = Json;

/** Content of a Messages turn: a user's plain string stays a string; everything else is blocks. */
export type TurnContent = string | Block[];

const PDF_DATA_URL = /^data:application\/pdf;base64,(.*)$/is;

/** A text block for `text`, keeping the part's prompt-caching breakpoint when it has one. */
export function textBlock(text: string, part?: Json): Block {
  return withCacheControl({ type: 'text', text }, part);
}

/** `block` with the `cache_control` of the client part it came from, if that part set one. */
export function withCacheControl(block: Block, part: Json | undefined): Block {
  return part !== undefined && isSet(part.cache_control) ? { ...block, cache_control: part.cache_control } : block;
}

export function nonEmptyText(blocks: Block[]): Block[] {
  return blocks.filter((block) => block.type !== 'text' || block.text !== '');
}

/** A PDF sent inline as `fileData`, a data:application/pdf;base64 URL read from `param`. */
export function pdfDataBlock(fileData: unknown, param: string): Block {
  const pdf = PDF_DATA_URL.exec(requireString(fileData, param));
  if (pdf === null) throw invalid(param, 'must be a data:application/pdf;base64 URL; only PDF files can be sent to this model.');
  return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf[1] } };
}

/** A `tool_use` block for a call whose id and name were already read; `args` is read from `argsParam`. */
export function toolUse(id: string, name: string, args: unknown, argsParam: string, toolNames: ToolNameMap): Block {
  const input = toolInput(args, argsParam);
  return { type: 'tool_use', id, name: toolNames.upstream(name), input };
}

/** OpenAI carries arguments as JSON text, Messages as an object; '' is a call without arguments. */
function toolInput(value: unknown, param: string): Json {
  if (typeof value !== 'string') throw invalid(param, 'must be a string of JSON.');
  if (value.trim() === '') return {};
  let input: unknown;
  try {
    input = JSON.parse(value);
  } catch {
    throw invalid(param, 'is not valid JSON.');
  }
  if (!isObject(input)) throw invalid(param, 'must be a JSON object.');
  return input;
}

/** A `tool_result` block; an empty result omits `content`, which Messages allows. */
export function toolResult(toolUseId: string, content: TurnContent): Block {
  return content.length === 0 ? { type: 'tool_result', tool_use_id: toolUseId } : { type: 'tool_result', tool_use_id: toolUseId, content };
}
