/**
 * The request-level record of an upstream exchange: published as `ctx.state.exchange` before the
 * first attempt, updated by each attempt, and settled exactly once with how the exchange ended and
 * its usage, whether an answer was committed, every attempt failed, or the client left.
 */
import type { AttemptRecord, Exchange, ExchangeEnd, ExchangeOutcome, GatewayContext } from '../kernel/context';
import type { Usage } from '../protocols/types';
import type { Target } from '../routing/resolve';
import type { ReportEnd } from './attempt';

/** nginx's status for a request whose client closed the connection first; it only reaches logs. */
export const CLIENT_CLOSED_REQUEST = 499;

const NOTHING_RELAYED = (): Promise<number> => Promise.resolve(0);

/** Usage of an exchange that did not end delivered counts only what was produced: it is partial. */
function usageFor(end: ExchangeEnd, usage: Usage | null): Usage | null {
  if (usage === null || end.kind === 'delivered') return usage;
  // Object.assign, not a spread followed by `source`: that is copied on V8's slow path (docs/benchmarks.md).
  return Object.assign({}, usage, { source: 'partial' as const });
}

export interface ExchangeRecorder {
  /** Marks the start of an attempt at `target`. */
  attempt(target: Target): void;
  /** Logs how an attempt (or a skipped route) ended. */
  logAttempt(record: AttemptRecord): void;
  /** Marks the moment the answer was committed, with the upstream's own id for that answer. */
  committed(upstreamRequestId: string | null): void;
  /** How a committed answer reports its end. */
  readonly report: ReportEnd;
  /** Settles an exchange that ended without a committed answer. */
  fail(error: unknown, status: number): void;
  abort(): void;
}

export function openExchange(ctx: GatewayContext, first: Target): ExchangeRecorder {
  let settle!: (outcome: ExchangeOutcome) => void;
  const finished = new Promise<ExchangeOutcome>((resolve) => (settle = resolve));
  const exchange: Exchange = { provider: first.provider.id, upstreamModel: first.route.upstream_model, attempts: 0, attemptLog: [], finished };
  let committedAt: number | null = null;
  let upstreamRequestId: string | null = null;
  ctx.state.exchange = exchange;
  let settled = false;
  const done = (end: ExchangeEnd, usage: Usage | null, status: number, outputTokens: () => Promise<number>, replyId: string | null = null) => {
    if (settled) return;
    settled = true;
    settle({
      end,
      status,
      provider: exchange.attempts === 0 ? null : exchange.provider,
      upstreamModel: exchange.attempts === 0 ? null : exchange.upstreamModel,
      attempts: exchange.attempts,
      attemptLog: exchange.attemptLog,
      committedAt,
      upstreamRequestId,
      usage: usageFor(end, usage),
      outputTokens,
      replyId,
    });
  };
  return {
    attempt(target) {
      exchange.provider = target.provider.id;
      exchange.upstreamModel = target.route.upstream_model;
      exchange.attempts += 1;
    },
    logAttempt: (record) => exchange.attemptLog.push(record),
    committed(id) {
      committedAt = performance.now();
      upstreamRequestId = id;
    },
    report: done,
    fail: (error, status) => done({ kind: 'failed', error }, null, status, NOTHING_RELAYED),
    abort: () => done({ kind: 'aborted' }, null, CLIENT_CLOSED_REQUEST, NOTHING_RELAYED),
  };
}
