/**
 * Chat message content as Messages content blocks: the text of every role, the parts a user may
 * attach, and a tool message's result. Empty text is dropped here because Messages rejects empty
 * text blocks (PROTOCOLS.md §4.1).
 */
import { imageBlock } from '../images';
import { invalid, isSet, requireRecord, requireString, type Json } from './fields';

/** A Messages content block. */
export type Block = Json;

/** Content of a Messages turn: a plain string, or blocks. */
export type TurnContent = string | Block[];

const PDF_DATA_URL = /^data:application\/pdf;base64,(.*)$/is;

/** A text block for `text`, keeping the part's prompt-caching breakpoint when it has one. */
export function textBlock(text: string, part?: Json): Block {
  return withCacheControl({ type: 'text', text }, part);
}

function withCacheControl(block: Block, part: Json | undefined): Block {
  return part !== undefined && isSet(part.cache_control) ? { ...block, cache_control: part.cache_control } : block;
}

function nonEmptyText(blocks: Block[]): Block[] {
  return blocks.filter((block) => block.type !== 'text' || block.text !== '');
}

/**
 * Blocks for content that may only hold text: system, developer and tool messages. `alsoRefusal`
 * admits the `refusal` parts an assistant message may carry; a refusal is what the assistant said.
 */
export function textOnlyBlocks(content: unknown, param: string, alsoRefusal = false): Block[] {
  if (!isSet(content)) return [];
  if (typeof content === 'string') return nonEmptyText([textBlock(content)]);
  const parts = contentParts(content, param).map((value, k) => {
    const partParam = `${param}[${k}]`;
    const part = requireRecord(value, partParam);
    if (part.type === 'text') return textBlock(requireString(part.text, `${partParam}.text`), part);
    if (alsoRefusal && part.type === 'refusal') return textBlock(requireString(part.refusal, `${partParam}.refusal`), part);
    throw invalid(`${partParam}.type`, `'${String(part.type)}' is not allowed here; this message takes text parts only.`);
  });
  return nonEmptyText(parts);
}

/** A user message's content: a string stays a string, parts become text, image and document blocks. */
export function userContent(content: unknown, param: string): TurnContent {
  if (typeof content === 'string') return content;
  return nonEmptyText(contentParts(content, param).map((part, k) => userPartBlock(part, `${param}[${k}]`)));
}

function contentParts(content: unknown, param: string): readonly unknown[] {
  if (!Array.isArray(content)) throw invalid(param, 'must be a string or an array of content parts.');
  return content;
}

function userPartBlock(value: unknown, param: string): Block {
  const part = requireRecord(value, param);
  switch (part.type) {
    case 'text':
      return textBlock(requireString(part.text, `${param}.text`), part);
    case 'image_url':
      return withCacheControl(imagePartBlock(requireRecord(part.image_url, `${param}.image_url`), `${param}.image_url`), part);
    case 'file':
      return withCacheControl(documentBlock(requireRecord(part.file, `${param}.file`), `${param}.file`), part);
    case 'input_audio':
      throw invalid(param, 'is audio input, which this model cannot read; send text, images or PDF files.');
    default:
      throw invalid(`${param}.type`, `'${String(part.type)}' is not a content part this model can read.`);
  }
}

/** `detail` has no Messages equivalent (the model picks its own resolution), so only the URL is read. */
function imagePartBlock(image: Json, param: string): Block {
  return imageBlock(requireString(image.url, `${param}.url`), `${param}.url`);
}

/** A PDF sent inline; uploaded files live with OpenAI, where an Anthropic model cannot read them. */
function documentBlock(file: Json, param: string): Block {
  if (!isSet(file.file_data)) {
    throw invalid(param, 'must carry file_data (a data:application/pdf;base64 URL); files uploaded by file_id cannot be read by this model.');
  }
  const pdf = PDF_DATA_URL.exec(requireString(file.file_data, `${param}.file_data`));
  if (pdf === null) throw invalid(`${param}.file_data`, 'must be a data:application/pdf;base64 URL; only PDF files can be sent to this model.');
  return { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: pdf[1] } };
}

/** A tool message as a `tool_result` block; an empty result omits `content`, which Messages allows. */
export function toolResultBlock(message: Json, param: string): Block {
  const toolUseId = message.tool_call_id;
  if (typeof toolUseId !== 'string' || toolUseId === '') throw invalid(`${param}.tool_call_id`, 'must name the tool call this message answers.');
  const content = typeof message.content === 'string' ? message.content : textOnlyBlocks(message.content, `${param}.content`);
  return content.length === 0 ? { type: 'tool_result', tool_use_id: toolUseId } : { type: 'tool_result', tool_use_id: toolUseId, content };
}

/** Content as blocks, for merging two turns of the same role. */
export function asBlocks(content: TurnContent): Block[] {
  return typeof content === 'string' ? [textBlock(content)] : content;
}

/** Whether a block is a tool result: Messages wants those first in their user turn. */
export function isToolResult(block: Block): boolean {
  return block.type === 'tool_result';
}
