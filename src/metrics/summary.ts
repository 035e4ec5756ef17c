/**
 * One request, summed up once it is over: what the metrics plugin counts and what the request log
 * line says. Built from the typed request state after the chain has run; a stream outlives the
 * chain, so the summary waits for `exchange.finished` and then for the charge, without ever holding
 * up the response (callers do not await it on the request's path).
 */
import type { ProviderProtocol } from '../config/types';
import type { AttemptRecord, ExchangeEnd, GatewayState } from '../kernel/context';
import type { ErrorCode } from '../kernel/errors';
import type { EndpointId, TokenCounts, ToolCalls } from '../protocols/types';
import type { ChargeRecord, UsageSourceRecord } from '../store/store';

export interface RequestSummary {
  readonly requestId: string;
  /** The client's own `x-request-id`, when it sent a well-formed one. */
  readonly clientRequestId: string | null;
  /** '' for a path that is no endpoint. */
  readonly endpoint: EndpointId | '';
  /** A configured model id; '' when the request was refused before its model was resolved. */
  readonly model: string;
  /** Null when the body was never read. */
  readonly stream: boolean | null;
  readonly accountId: string | null;
  /** The key's shown prefix (`sk-AbCd`); never the key. */
  readonly keyPrefix: string | null;
  /** The status the client got (499: it left before the answer). */
  readonly status: number;
  /** The gateway's own error code when it answered with one. */
  readonly errorCode: ErrorCode | null;
  /** How the upstream exchange ended; null when no upstream was involved. */
  readonly outcome: ExchangeEnd['kind'] | null;
  /** The provider that answered (or was tried last). */
  readonly provider: string | null;
  /** That provider's wire protocol, from the config the request ran under; null when none was tried. */
  readonly providerProtocol: ProviderProtocol | null;
  /** Upstream attempts made, failovers included (skipped routes not counted). */
  readonly attempts: number;
  readonly attemptLog: readonly AttemptRecord[];
  readonly upstreamRequestId: string | null;
  /** Token counts by kind, as billed (or as reported, billing off); null when nothing was counted. */
  readonly tokens: TokenCounts | null;
  /** Calls of per-call-billed server tools, as billed or reported. */
  readonly toolCalls: ToolCalls;
  /** Tools called that have no price (so were not charged); empty when billing did not settle. */
  readonly unpricedTools: readonly string[];
  readonly usageSource: UsageSourceRecord | null;
  /** Nano-units; null when billing did not settle this request. */
  readonly cost: bigint | null;
  /** Nano-units charged above the hold (billing.overage: charge); 0 when none or not billed. */
  readonly overage: bigint;
  /** Nano-units the upstream's usage cost above the hold but not charged (billing.overage: cap). */
  readonly unbilled: bigint;
  /** The limit that refused the request, when rate-limited. */
  readonly rateLimited: 'requests' | 'tokens' | 'concurrency' | null;
  /** From the start of observation to the end of the answer (a stream's last byte). */
  readonly durationMs: number;
  /** To the commit of an upstream answer (its first byte); null when none was committed. */
  readonly ttfbMs: number | null;
  /**
   * Time spent in Tollgate itself for a committed upstream answer: for a plain reply the duration
   * less every attempt's time, for a stream the time to first byte less every attempt's time
   * (failed attempts before the commit are the providers' time, not ours). Null otherwise.
   */
  readonly overheadMs: number | null;
  /** From the answer's end to its charge being settled (billing's settle stage); null when billing did not settle. */
  readonly settleMs: number | null;
}

/** What the observer knows when the chain (or the whole app) has returned or thrown. */
export interface Observed {
  /** `performance.now()` when observation started. */
  readonly startedAt: number;
  /** The status the client got or will get. */
  readonly status: number;
  /** The gateway's error code when one was thrown. */
  readonly errorCode: ErrorCode | null;
}

function attemptTime(log: readonly AttemptRecord[]): number {
  let total = 0;
  for (const attempt of log) total += attempt.durationMs;
  return total;
}

declare module '../kernel/context' {
  interface GatewayState {
    /**
     * The request's summary once asked for: one per request, the metrics plugin, the log line and the
     * span read the same one. A slot of the state rather than a WeakMap keyed by it: each weak entry
     * is more work for every garbage collection while the request lives.
     */
    summary?: Promise<RequestSummary>;
  }
}

/**
 * Waits for the exchange to finish and the charge to settle, then sums the request up; computed once
 * per request, whoever asks first (the first caller's `observed` stands). `onEnded` runs as soon as
 * the answer is over, before the wait for the charge. Never rejects.
 */
export function summarize(state: Partial<GatewayState>, observed: Observed, onEnded?: () => void): Promise<RequestSummary> {
  const known = state.summary;
  if (known !== undefined) {
    if (onEnded !== undefined) void (state.exchange?.finished ?? Promise.resolve()).then(onEnded);
    return known;
  }
  return (state.summary = computeSummary(state, observed, onEnded));
}

function providerProtocolOf(state: Partial<GatewayState>, provider: string | null): ProviderProtocol | null {
  if (provider === null || state.config === undefined) return null;
  return state.config.providers[provider]?.protocol ?? null;
}

async function computeSummary(state: Partial<GatewayState>, observed: Observed, onEnded?: () => void): Promise<RequestSummary> {
  const outcome = state.exchange === undefined ? null : await state.exchange.finished;
  const endedAt = performance.now();
  onEnded?.();
  // `charged` always resolves (billing settles on every path once it has held); guard regardless.
  const charge = state.billing === undefined ? null : await state.billing.charged.catch(() => null);
  const settleMs = charge === null ? null : performance.now() - endedAt;

  const { startedAt } = observed;
  const request = state.request;
  const attemptLog = outcome?.attemptLog ?? [];
  const committedAt = outcome?.committedAt ?? null;
  const ttfbMs = committedAt === null ? null : committedAt - startedAt;
  const durationMs = endedAt - startedAt;
  let overheadMs: number | null = null;
  if (committedAt !== null && request !== undefined) {
    overheadMs = Math.max(0, (request.stream ? (ttfbMs ?? 0) : durationMs) - attemptTime(attemptLog));
  }

  let tokens: TokenCounts | null = null;
  let toolCalls: ToolCalls = {};
  let usageSource: UsageSourceRecord | null = null;
  if (charge !== null) {
    tokens = tokensOf(charge);
    toolCalls = charge.toolCalls;
    usageSource = charge.usageSource;
  } else if (outcome !== null && state.endpoint?.generates === true) {
    const usage = outcome.usage;
    tokens = usage === null ? null : tokensOf(usage);
    toolCalls = usage?.toolCalls ?? {};
    usageSource = usage?.source ?? 'none';
  }

  return {
    requestId: state.requestId ?? '',
    clientRequestId: state.clientRequestId ?? null,
    endpoint: state.endpoint?.id ?? '',
    model: request?.model.id ?? '',
    stream: request?.stream ?? null,
    accountId: state.auth?.account.id ?? null,
    keyPrefix: state.auth?.key.prefix ?? null,
    status: outcome?.status ?? observed.status,
    errorCode: observed.errorCode,
    outcome: outcome?.end.kind ?? null,
    provider: outcome?.provider ?? null,
    providerProtocol: providerProtocolOf(state, outcome?.provider ?? null),
    attempts: outcome?.attempts ?? 0,
    attemptLog,
    upstreamRequestId: outcome?.upstreamRequestId ?? null,
    tokens,
    toolCalls,
    unpricedTools: charge === null ? [] : unpricedTools(charge),
    usageSource,
    cost: charge?.cost ?? null,
    overage: charge?.overage ?? 0n,
    unbilled: charge?.unbilled ?? 0n,
    rateLimited: state.rateLimit?.refused ?? null,
    durationMs,
    ttfbMs,
    overheadMs,
    settleMs,
  };
}

/** The token counts alone, one per kind: a literal, which the log line's serializer walks fastest. */
function tokensOf(counts: TokenCounts): TokenCounts {
  return {
    inputTokens: counts.inputTokens,
    cacheWriteTokens: counts.cacheWriteTokens,
    cacheWrite1hTokens: counts.cacheWrite1hTokens,
    cacheReadTokens: counts.cacheReadTokens,
    outputTokens: counts.outputTokens,
    imageInputTokens: counts.imageInputTokens,
    imageOutputTokens: counts.imageOutputTokens,
  };
}

/** Tools a priced charge called that its prices do not name: called, recorded, not charged. */
function unpricedTools(charge: ChargeRecord): string[] {
  const prices = charge.prices;
  return prices === null ? [] : Object.keys(charge.toolCalls).filter((tool) => prices.tool_calls[tool] === undefined);
}
