/**
 * Tracing for one gateway: off (the default) it only carries a client's `traceparent`/`tracestate`
 * on to the provider unchanged; on, it continues the client's trace (or starts one, sampled by
 * ratio), records the request's spans and exports them as OTLP/HTTP JSON through a bounded queue.
 * Context is passed explicitly per request (no async-hooks context manager on the hot path). The
 * exporting side is in exporting-tracing.ts, loaded only when tracing is on: the OpenTelemetry SDK
 * is memory a gateway that does not trace never spends.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Endpoint } from '../protocols/types';
import type { AttemptTrace } from '../kernel/context';
import type { RequestTrace } from './request-trace';

export interface Tracing {
  /** Whether spans are recorded and exported (false: context is only passed through). */
  readonly enabled: boolean;
  startRequest(headers: IncomingHttpHeaders, endpoint: Endpoint, startedAt: number): RequestTrace;
  /** Exports what is queued, then stops. */
  shutdown(): Promise<void>;
}

/** W3C trace context: version 00, 32 hex trace id, 16 hex parent id, 2 hex flags; all-zero ids are invalid. */
const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;
const MAX_TRACESTATE = 512;

const NO_ATTEMPT: AttemptTrace = { headers: {}, failed: () => undefined, committed: () => undefined, ended: () => undefined };
const NO_TRACE: RequestTrace = { startAttempt: () => NO_ATTEMPT, finish: () => undefined };

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Tracing off: a well-formed incoming trace context goes upstream as it came; nothing is recorded. */
export const passThroughTracing: Tracing = {
  enabled: false,
  startRequest(headers) {
    const traceparent = single(headers.traceparent)?.trim().toLowerCase();
    if (traceparent === undefined || !TRACEPARENT.test(traceparent)) return NO_TRACE;
    const tracestate = single(headers.tracestate);
    const forwarded: Record<string, string> = { traceparent };
    if (tracestate !== undefined && tracestate.length <= MAX_TRACESTATE) forwarded.tracestate = tracestate;
    const attempt: AttemptTrace = { ...NO_ATTEMPT, headers: forwarded };
    return { startAttempt: () => attempt, finish: () => undefined };
  },
  shutdown: async () => undefined,
};
