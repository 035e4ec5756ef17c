/**
 * What a Responses request refers to, read from the minted store before the request is translated:
 * the store may be Redis, and a translator maps requests synchronously, so the conversation
 * `previous_response_id` names and every item an `item_reference` names are looked up here once,
 * for the account that sent the request. The translator then reads them from this snapshot, and
 * keeps its own reply through `remember` for the next request.
 */
import type { Logger } from 'pino';
import { isObject, type Json } from '../../json';
import { isSet } from '../to-messages/fields';
import type { MintedStore, MintedTurn } from './minted';

export interface ResponseReferences {
  /** The conversation `id` ended; undefined when it is not one this account can refer to. */
  conversation(id: string): Json[] | undefined;
  item(id: string): Json | undefined;
  /** Keeps response `id` for later references by the same account. */
  remember(id: string, turn: MintedTurn): void;
}

/** No store: nothing can be referred to and nothing is kept. */
export const NO_REFERENCES: ResponseReferences = {
  conversation: () => undefined,
  item: () => undefined,
  remember: () => undefined,
};

/** An `item_reference`; the SDKs may also leave the type out and send the id alone. */
export function isReference(entry: unknown): entry is Json {
  if (!isObject(entry)) return false;
  return entry.type === 'item_reference' || (!isSet(entry.type) && !isSet(entry.role) && isSet(entry.id));
}

export async function readReferences(store: MintedStore, scope: string, body: Readonly<Json>, logger: Logger): Promise<ResponseReferences> {
  const previousId = typeof body.previous_response_id === 'string' ? body.previous_response_id : null;
  const itemIds = Array.isArray(body.input) ? body.input.filter(isReference).flatMap((entry) => (typeof entry.id === 'string' ? [entry.id] : [])) : [];
  const [previous, items] = await Promise.all([
    previousId === null ? undefined : store.conversation(scope, previousId),
    Promise.all(itemIds.map(async (id) => [id, await store.item(scope, id)] as const)),
  ]);
  const found = new Map(items);
  return {
    conversation: (id) => (id === previousId ? previous : undefined),
    item: (id) => found.get(id),
    remember(id, turn) {
      store.remember(scope, id, turn).catch((error: unknown) => logger.warn({ err: error }, 'minted responses: a response could not be kept'));
    },
  };
}
