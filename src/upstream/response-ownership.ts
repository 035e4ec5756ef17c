/**
 * Response ownership on native OpenAI Responses routes (`responses.own_ids_only`): every route of a
 * model's shares the operator's OpenAI project, where any `resp_…` or `conv_…` id resolves whoever
 * names it. So Tollgate records the response ids it relayed to each account, and refuses a request
 * that names one it did not relay to that account (`previous_response_id`, `conversation`), before
 * any provider is called, with the 400 `previous_response_not_found` the translated route gives for
 * an id it did not mint.
 *
 * Kept cheap: a request that names nothing costs nothing; a recorded or verified id is remembered in
 * this process, so an agent loop continuing its own last response on the same instance costs no store
 * read; the id of a relayed response is written after the response is over, off the client's path.
 */
import type { Logger } from 'pino';
import type { GatewayContext } from '../kernel/context';
import { GatewayError } from '../kernel/errors';
import { need } from '../kernel/need';
import { attemptOrder } from '../routing/plan';
import type { RelayedId, RelayedResponseStore } from '../store/relayed-responses';
import { speaksNatively } from '../wire';

/** Ids known to belong to an account, per process; the oldest is forgotten first. */
const KNOWN_CAPACITY = 100_000;

export class ResponseOwnership {
  private readonly known = new Map<string, true>();

  constructor(
    private readonly store: RelayedResponseStore,
    private readonly logger: Logger,
  ) {}

  /** Throws the 400 for a reference this account may not name; resolves when every one is its own. */
  async check(ctx: GatewayContext): Promise<void> {
    const refs = referencesToCheck(ctx);
    if (refs.length === 0) return;
    const accountId = need(ctx, 'auth').account.id;
    for (const ref of refs) {
      if (this.known.has(knownKey(accountId, ref))) continue;
      if (!(await this.store.relayedTo(accountId, ref))) throw notRelayed(ref);
      this.remember(accountId, ref);
    }
  }

  /** Records the response the exchange relayed, once it is over; never throws. */
  recordAfter(ctx: GatewayContext): void {
    const { endpoint, config, exchange, auth } = ctx.state;
    if (endpoint.id !== 'responses' || !config.responses.own_ids_only || exchange === undefined || auth === undefined) return;
    const accountId = auth.account.id;
    void exchange.finished.then((outcome) => {
      if (outcome.replyId === null) return;
      const ref: RelayedId = { kind: 'response', id: outcome.replyId };
      // Known here at once, so the next turn on this instance needs no read, even before the write lands.
      this.remember(accountId, ref);
      return this.store.record(accountId, [ref], new Date());
    }).catch((error: unknown) => this.logger.warn({ err: error }, 'responses: a relayed response id could not be recorded; naming it later is refused'));
  }

  private remember(accountId: string, ref: RelayedId): void {
    const key = knownKey(accountId, ref);
    this.known.delete(key);
    this.known.set(key, true);
    if (this.known.size > KNOWN_CAPACITY) this.known.delete(this.known.keys().next().value as string);
  }
}

/** The references a native route would hand to OpenAI, when the operator asks for them to be checked. */
function referencesToCheck(ctx: GatewayContext): RelayedId[] {
  const { endpoint, config, request } = ctx.state;
  if (endpoint.id !== 'responses' || !config.responses.own_ids_only || request === undefined) return [];
  const { responseIds, conversationIds } = request.reach;
  if (responseIds.length + conversationIds.length === 0) return [];
  // A model served only by translation resolves ids from what Tollgate minted (translators/), never OpenAI's.
  if (!attemptOrder(request.model, config).some((target) => speaksNatively(target.provider, endpoint))) return [];
  return [...responseIds.map((id): RelayedId => ({ kind: 'response', id })), ...conversationIds.map((id): RelayedId => ({ kind: 'conversation', id }))];
}

function knownKey(accountId: string, ref: RelayedId): string {
  return `${accountId}\n${ref.kind}\n${ref.id}`;
}

function notRelayed(ref: RelayedId): GatewayError {
  return ref.kind === 'response'
    ? new GatewayError('TOLLGATE_ERR_PREVIOUS_RESPONSE_NOT_FOUND', `Previous response with id '${ref.id}' not found.`, { param: 'previous_response_id' })
    : new GatewayError('TOLLGATE_ERR_PREVIOUS_RESPONSE_NOT_FOUND', `Conversation with id '${ref.id}' not found.`, { param: 'conversation' });
}
