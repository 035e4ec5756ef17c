/** The parts of a test charge most tests leave plain: no client id, no tool calls, nothing held, no overage, no prices. */
import type { ApiKeyRecord, ChargeRecord } from '../../src/store/store';

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

/** A delivered chat charge of `cost` on `key`'s account, usage from the upstream; `extra` overrides any field. */
export function chargeOf(key: ApiKeyRecord, requestId: string, cost: bigint, extra: Partial<ChargeRecord> = {}): ChargeRecord {
  return {
    requestId,
    accountId: key.accountId,
    keyId: key.id,
    model: 'gpt-test',
    provider: 'mock',
    endpoint: 'chat',
    images: 0,
    inputTokens: 100,
    cacheWriteTokens: 1, cacheWrite1hTokens: 0,
    cacheReadTokens: 2,
    outputTokens: 50,
    imageInputTokens: 0,
    imageOutputTokens: 0,
    cost,
    ...PLAIN_CHARGE,
    usageSource: 'upstream',
    status: 200,
    outcome: 'delivered',
    latencyMs: 123,
    createdAt: new Date(Math.floor(Date.now() / 1000) * 1000),
    ...extra,
  };
}
