/**
 * Tracing on: the client's trace continued (or a new one sampled by ratio), the request's spans
 * recorded and exported as OTLP/HTTP JSON through a bounded queue. Loaded only when tracing is on.
 */
import { ROOT_CONTEXT, defaultTextMapGetter } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, ParentBasedSampler, TraceIdRatioBasedSampler } from '@opentelemetry/sdk-trace-base';
import { openRequestTrace } from './request-trace';
import type { TracesSettings } from './settings';
import { BoundedSpanQueue, type DropReason } from './span-queue';
import type { Tracing } from './tracing';

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
