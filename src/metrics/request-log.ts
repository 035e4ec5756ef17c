/**
 * The request log line: one JSON object per request, written by the kernel when the answer is over
 * (a stream's last byte) and its charge settled. Built field by field from the request summary, so
 * what it holds is decided here and nowhere else: ids, the key's shown prefix (never the key),
 * counts, timings. Headers and prompt or completion text are never part of it.
 */
import { formatUnits } from '../billing/money';
import type { TokenCounts, TokenKind } from '../protocols/types';
import type { RequestSummary } from './summary';

/** The log line's name for each token kind (a kind added without one here does not compile). */
interface LogTokenNames {
  inputTokens: 'input';
  cacheWriteTokens: 'cacheWrite';
  cacheWrite1hTokens: 'cacheWrite1h';
  cacheReadTokens: 'cacheRead';
  outputTokens: 'output';
  imageInputTokens: 'imageInput';
  imageOutputTokens: 'imageOutput';
}

type LoggedTokens = { readonly [K in TokenKind as LogTokenNames[K]]: number };

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

/** Whether a tool call was counted: `toolCalls` is on the line only then. */
function anyToolCall(toolCalls: Readonly<Record<string, number>>): boolean {
  for (const _tool in toolCalls) return true;
  return false;
}

/**
 * One literal of one shape for every line: a field the line leaves out is undefined, which the JSON
 * writer skips (`JSON.stringify` and pino alike), so the text is as if it were absent. Spreading the
 * optional fields in would build every line field by field, with a shape of its own.
 */
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
    toolCalls: anyToolCall(summary.toolCalls) ? summary.toolCalls : undefined,
    cost: summary.cost === null ? null : formatUnits(summary.cost),
    overage: summary.overage > 0n ? formatUnits(summary.overage) : undefined,
    unbilled: summary.unbilled > 0n ? formatUnits(summary.unbilled) : undefined,
    usageSource: summary.usageSource,
    durationMs: ms(summary.durationMs),
    ttfbMs: summary.ttfbMs === null ? null : ms(summary.ttfbMs),
    upstreamRequestId: summary.upstreamRequestId,
  };
}

/** The counts under the log line's names: a literal, as `tokensOf` in the summary. */
function loggedTokens(tokens: TokenCounts): LoggedTokens {
  return {
    input: tokens.inputTokens,
    cacheWrite: tokens.cacheWriteTokens,
    cacheWrite1h: tokens.cacheWrite1hTokens,
    cacheRead: tokens.cacheReadTokens,
    output: tokens.outputTokens,
    imageInput: tokens.imageInputTokens,
    imageOutput: tokens.imageOutputTokens,
  };
}
