/**
 * Tracing for one gateway: off (the default) it only carries a client's `traceparent`/`tracestate`
 * on to the provider unchanged; on, it continues the client's trace (or starts one, sampled by
 * ratio), records the request's spans and exports them as OTLP/HTTP JSON through a bounded queue.
 * Context is passed explicitly per request (no async-hooks context manager on the hot path).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { ROOT_CONTEXT, defaultTextMapGetter } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, ParentBasedSampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import type { Endpoint } from '../protocols/types';
import type { AttemptTrace } from '../kernel/context';
import { openRequestTrace, type RequestTrace } from './request-trace';
import type { TracesSettings } from './settings';
import { BoundedSpanQueue, type DropReason } from './span-queue';


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

/** Tracing on, exporting to `settings.url`; `onDrop` hears of every span not exported. */
export function exportingTracing(settings: TracesSettings, version: string, onDrop: (reason: DropReason, count: number) => void): Tracing {
  const exporter = new OTLPTraceExporter({ url: settings.url, headers: { ...settings.headers }, timeoutMillis: settings.exportTimeoutMs });
  const queue = new BoundedSpanQueue(exporter, { ...settings, onDrop });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': settings.serviceName, 'service.version': version }),
    // A client's sampling decision is followed; a new trace is sampled by ratio.
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(settings.sampleRatio) }),
    spanProcessors: [queue],
  });
  const tracer = provider.getTracer('tollgate', version);
  const propagator = new W3CTraceContextPropagator();
  return {
    enabled: true,
    startRequest(headers, endpoint, startedAt) {
      const parent = propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
      return openRequestTrace(tracer, propagator, parent, endpoint, startedAt);
    },
    shutdown: () => provider.shutdown(),
  };
}
