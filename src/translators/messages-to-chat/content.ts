/** The blocks a user turn (or a tool result) may carry, as chat content parts: text, images and documents. */
import { object, stringField, type Json } from '../../json';
import { imageUrl } from '../images';
import { invalid } from './fields';

/** Chat needs a filename beside `file_data`; Anthropic documents have only an optional title. */
const DEFAULT_PDF_FILENAME = 'document.pdf';

/** A user content block as a chat content part; other block kinds are refused. */
export function userPart(block: Json, param: string): Json {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: stringField(block.text) };
    case 'image':
      return imagePart(block, param);
    case 'document':
      return documentPart(block, param);
    case 'tool_reference':
      return toolReferencePart(block, param);
    default:
      throw invalid(param, `'${String(block.type)}' blocks cannot be sent to this model.`);
  }
}

function imagePart(block: Json, param: string): Json {
  const url = imageUrl(object(block.source));
  if (url === null) throw invalid(`${param}.source`, 'an image must have a base64 or url source for this model.');
  return { type: 'image_url', image_url: { url } };
}

/** A PDF becomes a `file` part, plain text a text part; chat has no other kind of document. */
function documentPart(block: Json, param: string): Json {
  if (object(block.citations).enabled === true) {
    throw invalid(`${param}.citations`, 'citations are not available on this model; remove them.');
  }
  const source = object(block.source);
  if (source.type === 'text' && typeof source.data === 'string') return { type: 'text', text: source.data };
  if (source.type === 'base64' && source.media_type === 'application/pdf' && typeof source.data === 'string') {
    const filename = typeof block.title === 'string' && block.title !== '' ? block.title : DEFAULT_PDF_FILENAME;
    return { type: 'file', file: { filename, file_data: `data:application/pdf;base64,${source.data}` } };
  }
  const kind = source.type === 'base64' ? `base64 ${String(source.media_type)}` : `'${String(source.type)}'`;
  throw invalid(`${param}.source`, `documents must be base64 PDF or plain text for this model; got a ${kind} source.`);
}

/**
 * Claude Code's tool search answers with `tool_reference` blocks, which load a deferred tool on
 * Anthropic's side. Here every deferred tool is already declared (see tools.ts), so the reference
 * only tells the model the tool is there to use.
 */
function toolReferencePart(block: Json, param: string): Json {
  if (typeof block.tool_name !== 'string' || block.tool_name === '') throw invalid(`${param}.tool_name`, 'must be a non-empty string.');
  return { type: 'text', text: `Tool loaded: ${block.tool_name}` };
}
