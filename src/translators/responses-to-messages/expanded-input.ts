/**
 * The conversation a Responses request stands for, spelled out: the one `previous_response_id`
 * ended, then the request's own input, with every `item_reference` replaced by the item it names.
 * Only responses Tollgate minted recently can be referred to (see minted.ts).
 */
import { isObject, type Json } from '../../json';
import { invalid, isSet, requireArray, requireString } from '../to-messages/fields';
import { mintedResponses } from './minted';

const SEND_IT_ALL = 'send the whole conversation in input instead';

export function expandedInput(body: Readonly<Json>): Json[] {
  const resolved = ownInput(body);
  if (!isSet(body.previous_response_id)) return resolved;
  const id = requireString(body.previous_response_id, 'previous_response_id');
  const previous = mintedResponses.conversation(id);
  if (previous === undefined) {
    throw invalid('previous_response_id', `'${id}' is not a response this gateway answered in the last 30 minutes; ${SEND_IT_ALL}.`);
  }
  return [...previous, ...resolved];
}

/** The request's own input items, references resolved: what a minted response keeps of its request. */
export function ownInput(body: Readonly<Json>): Json[] {
  const own = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : requireArray(body.input, 'input');
  return own.map((entry, i) => (isReference(entry) ? referencedItem(entry, `input[${i}]`) : (entry as Json)));
}

/** An `item_reference`; the SDKs may also leave the type out and send the id alone. */
function isReference(entry: unknown): entry is Json {
  if (!isObject(entry)) return false;
  return entry.type === 'item_reference' || (!isSet(entry.type) && !isSet(entry.role) && isSet(entry.id));
}

function referencedItem(reference: Json, param: string): Json {
  const id = requireString(reference.id, `${param}.id`);
  const item = mintedResponses.item(id);
  if (item === undefined) {
    throw invalid(param, `refers to item '${id}', which is not one this gateway returned in the last 30 minutes (items stored by OpenAI cannot be read for Claude models); send the item itself.`);
  }
  return item;
}
