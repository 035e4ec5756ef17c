/**
 * The responses and conversations Tollgate relayed to each account from a native OpenAI Responses
 * route: what `responses.own_ids_only` lets an account name again (`previous_response_id`,
 * `conversation`). An id belongs to the account it was first relayed to; the provider's ids are
 * unique, so a second account can never record one it was not given.
 */

/** What an id names: a response (`resp_…`) or a conversation (`conv_…`). */
type RelayedKind = 'response' | 'conversation';

export interface RelayedId {
  readonly kind: RelayedKind;
  readonly id: string;
}

export interface RelayedResponseStore {
  /** Records ids relayed to `accountId`; an id recorded already keeps its first account. */
  record(accountId: string, ids: readonly RelayedId[], at: Date): Promise<void>;
  /** Whether `id` was relayed to `accountId`. */
  relayedTo(accountId: string, ref: RelayedId): Promise<boolean>;
}

export const RELAYED_INSERT = 'INSERT INTO relayed_responses (kind, id, account_id, created_at) VALUES';
export const RELAYED_CONFLICT = 'ON CONFLICT (kind, id) DO NOTHING';
export const RELAYED_SELECT = 'SELECT 1 AS found FROM relayed_responses WHERE kind = ? AND id = ? AND account_id = ?';
