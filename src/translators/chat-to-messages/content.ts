/**
 * Chat message content as Messages content blocks: the text of every role, the parts a user may
 * attach, and a tool message's result. Empty text is dropped here because Messages rejects empty
 * text blocks (docs/protocols.md#chat-to-messages).
 */
import type { Json } from '../../json';
import { imageBlock } from '../images';
import { nonEmptyText, pdfDataBlock, textBlock, toolResult, withCacheControl, type Block, type TurnContent } from '../to-messages/blocks';
import { invalid, isSet, requireRecord, requireString } from '../to-messages/fields';

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
  return pdfDataBlock(file.file_data, `${param}.file_data`);
}

/** A tool message as a `tool_result` block; an empty result omits `content`, which Messages allows. */
export function toolResultBlock(message: Json, param: string): Block {
  const toolUseId = message.tool_call_id;
  if (typeof toolUseId !== 'string' || toolUseId === '') throw invalid(`${param}.tool_call_id`, 'must name the tool call this message answers.');
  const content = typeof message.content === 'string' ? message.content : textOnlyBlocks(message.content, `${param}.content`);
  return toolResult(toolUseId, content);
}
