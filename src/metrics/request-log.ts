/**
 * The request log line: one JSON object per request, written by the kernel when the answer is over
 * (a stream's last byte) and its charge settled. Built field by field from the request summary, so
 * what it holds is decided here and nowhere else: ids, the key's shown prefix (never the key),
 * counts, timings. Headers and prompt or completion text are never part of it.
 */
import { formatUnits } from '../billing/money';
import { TOKEN_KINDS, type TokenCounts, type TokenKind } from '../protocols/types';
import type { RequestSummary } from './summary';

/** The log line's name for each token kind. */
const LOG_TOKEN_NAMES = {
  inputTokens: 'input',
  cacheWriteTokens: 'cacheWrite',
  cacheWrite1hTokens: 'cacheWrite1h',
  cacheReadTokens: 'cacheRead',
  outputTokens: 'output',
} as const satisfies Record<TokenKind, string>;

type LoggedTokens = { readonly [K in TokenKind as (typeof LOG_TOKEN_NAMES)[K]]: number };

export interface RequestLogLine {
  readonly requestId: string;
  readonly clientRequestId: string | null;
  readonly accountId: string | null;
  readonly keyPrefix: string | null;
  readonly endpoint: string;
  readonly model: string;
  readonly stream: boolean | null;
  readonly provider: string | null;
  readonly attempts: number;
  readonly status: number;
  readonly errorCode: string | null;
  readonly outcome: string | null;
  readonly tokens: LoggedTokens | null;
  readonly toolCalls?: Readonly<Record<string, number>>;
  /** In currency units, exact (`0.000123`); null when billing did not settle the request. */
  readonly cost: string | null;
  /** Charged above the hold, or (overage: cap) not charged; present only when non-zero. */
  readonly overage?: string;
  readonly unbilled?: string;
  readonly usageSource: string | null;
  readonly durationMs: number;
  readonly ttfbMs: number | null;
  readonly upstreamRequestId: string | null;
}

/** Milliseconds to the microsecond: enough for latency, short in a log. */
function ms(value: number): number {
  return Math.round(value * 1000) / 1000;
}

export function requestLogLine(summary: RequestSummary): RequestLogLine {
  return {
    requestId: summary.requestId,
    clientRequestId: summary.clientRequestId,
    accountId: summary.accountId,
    keyPrefix: summary.keyPrefix,
    endpoint: summary.endpoint,
    model: summary.model,
    stream: summary.stream,
    provider: summary.provider,
    attempts: summary.attempts,
    status: summary.status,
    errorCode: summary.errorCode,
    outcome: summary.outcome,
    tokens: summary.tokens === null ? null : loggedTokens(summary.tokens),
    ...(Object.keys(summary.toolCalls).length > 0 && { toolCalls: summary.toolCalls }),
    cost: summary.cost === null ? null : formatUnits(summary.cost),
    ...(summary.overage > 0n && { overage: formatUnits(summary.overage) }),
    ...(summary.unbilled > 0n && { unbilled: formatUnits(summary.unbilled) }),
    usageSource: summary.usageSource,
    durationMs: ms(summary.durationMs),
    ttfbMs: summary.ttfbMs === null ? null : ms(summary.ttfbMs),
    upstreamRequestId: summary.upstreamRequestId,
  };
}

function loggedTokens(tokens: TokenCounts): LoggedTokens {
  return Object.fromEntries(TOKEN_KINDS.map((kind) => [LOG_TOKEN_NAMES[kind], tokens[kind]])) as LoggedTokens;
}
