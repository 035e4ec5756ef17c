/**
 * Responses message content as Messages content blocks. Empty text is dropped because Messages
 * rejects empty text blocks (docs/protocols.md#chat-to-messages).
 */
import type { Json } from '../../json';
import { imageBlock } from '../images';
import { nonEmptyText, pdfDataBlock, textBlock, type Block } from '../to-messages/blocks';
import { invalid, isSet, requireArray, requireRecord, requireString } from '../to-messages/fields';

/** Who a message's content belongs to decides which parts it may hold. */
export type ContentOwner = 'system' | 'user' | 'assistant';

export function contentBlocks(content: unknown, param: string, owner: ContentOwner): Block[] {
  if (typeof content === 'string') return nonEmptyText([textBlock(content)]);
  return nonEmptyText(requireArray(content, param).map((part, k) => partBlock(part, `${param}[${k}]`, owner)));
}

/** Text of every kind for anyone; a refusal is what an assistant said; images and files are the user's. */
function partBlock(value: unknown, param: string, owner: ContentOwner): Block {
  const part = requireRecord(value, param);
  if (part.type === 'input_text' || part.type === 'output_text') return textBlock(requireString(part.text, `${param}.text`));
  if (part.type === 'refusal' && owner === 'assistant') return textBlock(requireString(part.refusal, `${param}.refusal`));
  if (part.type === 'input_image' && owner === 'user') return imagePartBlock(part, param);
  if (part.type === 'input_file' && owner === 'user') return filePartBlock(part, param);
  throw invalid(`${param}.type`, `'${String(part.type)}' is not a content part a ${owner} message can carry to this model.`);
}

/** `detail` has no Messages equivalent: the model reads the image at its own resolution. */
function imagePartBlock(part: Json, param: string): Block {
  if (isSet(part.image_url)) return imageBlock(requireString(part.image_url, `${param}.image_url`), `${param}.image_url`);
  if (isSet(part.file_id)) throw invalid(`${param}.file_id`, 'refers to a file uploaded to OpenAI, which this model cannot read; send image_url as a data: or https URL.');
  throw invalid(`${param}.image_url`, 'must be set to a data: or https URL.');
}

/** A PDF sent inline or by URL; uploaded files live with OpenAI, where an Anthropic model cannot read them. */
function filePartBlock(part: Json, param: string): Block {
  if (isSet(part.file_data)) return pdfDataBlock(part.file_data, `${param}.file_data`);
  if (isSet(part.file_url)) {
    const url = requireString(part.file_url, `${param}.file_url`);
    if (!/^https?:\/\//i.test(url)) throw invalid(`${param}.file_url`, 'must be an http(s) URL of a PDF file.');
    return { type: 'document', source: { type: 'url', url } };
  }
  if (isSet(part.file_id)) throw invalid(`${param}.file_id`, 'refers to a file uploaded to OpenAI, which this model cannot read; send file_data as a data:application/pdf;base64 URL.');
  throw invalid(param, 'must carry file_data or file_url.');
}
