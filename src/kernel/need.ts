/**
 * The request-state slot a stage relies on an earlier stage to have filled (the request stage fills
 * `request`, the auth plugin `auth`). Empty, it is the gateway's own fault (a plugin disabled or
 * reordered under a stage that needs it), never the client's: a coded 500 with a generic message,
 * the slot's name kept in the cause for the log.
 */
import type { GatewayState } from './context';
import { GatewayError } from './errors';

/** The slots a stage may find empty: the optional ones. */
export type StateSlot = { [K in keyof GatewayState]-?: undefined extends GatewayState[K] ? K : never }[keyof GatewayState];

export function need<K extends StateSlot>(ctx: { readonly state: GatewayState }, slot: K): NonNullable<GatewayState[K]> {
  const value = ctx.state[slot];
  if (value === undefined || value === null) {
    throw new GatewayError('TOLLGATE_ERR_INTERNAL_STATE', 'The gateway failed to handle this request.', {
      cause: new Error(`the request state has no '${slot}': the stage that fills it has not run`),
    });
  }
  return value;
}
