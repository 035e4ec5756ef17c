/**
 * What a socket's `previous_response_id` continues from. Over WebSocket, clients (Codex, the Agents
 * SDK) send only the new items and name the response they follow, usually with `store: false`, so no
 * provider keeps the conversation: Tollgate does, in the table of minted responses (per account,
 * bounded, shared through Redis where there is one). Each response answered on a socket is kept
 * there with its own turn; a frame naming one gets the conversation it ended put before its input,
 * and goes upstream as a whole request, on every route of either family.
 *
 * An id this table does not hold is left in the request: it may be a response the provider stored
 * (and the native routes' ownership check decides whether this account may name it).
 */
import { isObject, type Json } from '../../json';
import type { MintedStore } from '../../translators/responses-to-messages/minted';

/** Where an account's socket turns are kept: the minted table, under the account's id. */
export interface TurnMemory {
  readonly store: MintedStore;
  readonly scope: string;
}

/** A frame's request once its previous response is resolved, and what to keep of it afterwards. */
export interface ContinuedRequest {
  readonly body: Json;
  /** The response this one continues, when Tollgate resolved it; null for a first turn. */
  readonly previous: string | null;
  /** The frame's own input, as items: the turn kept for the next frame. */
  readonly input: readonly Json[];
  /** Whether the conversation up to this response is whole in the table (so this turn may be kept). */
  readonly keepable: boolean;
}

/** The input as items: a string is one user message. */
function inputItems(input: unknown): Json[] {
  if (typeof input === 'string') return [{ type: 'message', role: 'user', content: input }];
  return Array.isArray(input) ? input.filter(isObject) : [];
}

export async function continueRequest(body: Json, memory: TurnMemory | null): Promise<ContinuedRequest> {
  const input = inputItems(body.input);
  const previous = body.previous_response_id;
  if (typeof previous !== 'string' || previous === '') return { body, previous: null, input, keepable: true };
  const conversation = memory === null ? undefined : await memory.store.conversation(memory.scope, previous);
  if (conversation === undefined) return { body, previous: null, input, keepable: false };
  const { previous_response_id: _resolved, ...rest } = body;
  return { body: { ...rest, input: [...conversation, ...input] }, previous, input, keepable: true };
}

/** Keeps response `id` (its frame's input and its output) for the frame that names it next. */
export async function rememberTurn(memory: TurnMemory | null, request: ContinuedRequest, id: string, output: readonly Json[]): Promise<void> {
  if (memory === null || !request.keepable) return;
  await memory.store.remember(memory.scope, id, { previous: request.previous, input: request.input, output });
}
