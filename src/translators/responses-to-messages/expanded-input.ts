/**
 * The conversation a Responses request stands for, spelled out: the one `previous_response_id`
 * ended, then the request's own input, with every `item_reference` replaced by the item it names.
 * Only responses Tollgate minted recently for the same account can be referred to (see minted.ts);
 * anything else is OpenAI's own 400, so the client knows to send the history itself.
 */
import type { Json } from '../../json';
import { GatewayError } from '../../kernel/errors';
import { isSet, requireArray, requireString } from '../to-messages/fields';
import { isReference, type ResponseReferences } from './references';

export function expandedInput(body: Readonly<Json>, references: ResponseReferences): Json[] {
  const resolved = ownInput(body, references);
  if (!isSet(body.previous_response_id)) return resolved;
  const id = requireString(body.previous_response_id, 'previous_response_id');
  const previous = references.conversation(id);
  if (previous === undefined) throw notFound(`Previous response with id '${id}' not found.`, 'previous_response_id');
  return [...previous, ...resolved];
}

/** The request's own input items, references resolved: what a minted response keeps of its request. */
export function ownInput(body: Readonly<Json>, references: ResponseReferences): Json[] {
  const own = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : requireArray(body.input, 'input');
  return own.map((entry, i) => (isReference(entry) ? referencedItem(requireString(entry.id, `input[${i}].id`), references, `input[${i}]`) : (entry as Json)));
}

function referencedItem(id: string, references: ResponseReferences, param: string): Json {
  const item = references.item(id);
  if (item === undefined) throw notFound(`Item with id '${id}' not found.`, param);
  return item;
}

function notFound(message: string, param: string): GatewayError {
  return new GatewayError('TOLLGATE_ERR_PREVIOUS_RESPONSE_NOT_FOUND', message, { param });
}
