/** The parts of a test charge most tests leave plain: no client id, no tool calls, nothing held, no overage, no prices. */
import type { ChargeRecord } from '../../src/store/store';

export const PLAIN_CHARGE: Pick<
  ChargeRecord,
  | 'clientRequestId' | 'toolCalls' | 'held' | 'overage' | 'unbilled' | 'prices' | 'serviceTier' | 'longContext'
  | 'sessionId' | 'requestedModel' | 'servedModel' | 'attempts' | 'ttfbMs' | 'userAgent' | 'origin'
> = {
  clientRequestId: null,
  toolCalls: {},
  held: 0n,
  overage: 0n,
  unbilled: 0n,
  prices: null,
  serviceTier: null,
  longContext: false,
  sessionId: null,
  requestedModel: null,
  servedModel: null,
  attempts: [],
  ttfbMs: null,
  userAgent: null,
  origin: null,
};
