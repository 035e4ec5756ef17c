/**
 * Whether and where Tollgate exports traces: gateway.yaml's `telemetry.traces` first, then the
 * standard OpenTelemetry environment variables for whatever it leaves unset
 * (https://opentelemetry.io/docs/specs/otel/protocol/exporter/, .../configuration/sdk-environment-variables/).
 */
import type { TracesConfig } from '../config/types';

export interface TracesSettings {
  /** The OTLP/HTTP traces URL. */
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly sampleRatio: number;
  readonly serviceName: string;
  /** The bounded export queue: at most this many finished spans wait; more are dropped and counted. */
  readonly maxQueueSize: number;
  readonly maxExportBatchSize: number;
  /** How often a partial batch is sent. */
  readonly scheduledDelayMs: number;
  /** One export gives up after this long (and its spans count as dropped). */
  readonly exportTimeoutMs: number;
}

type Env = Readonly<Record<string, string | undefined>>;

/** `key1=value1,key2=value2`, values percent-decoded (the OTLP exporter's header format). */
function parseHeaderList(text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (text ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    try {
      headers[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      // A malformed escape: that header is left out rather than sent garbled.
    }
  }
  return headers;
}

function positiveInteger(text: string | undefined, fallback: number): number {
  const value = Number(text);
  return text !== undefined && text !== '' && Number.isSafeInteger(value) && value > 0 ? value : fallback;
}

function ratio(text: string | undefined): number | null {
  const value = Number(text);
  return text !== undefined && text !== '' && Number.isFinite(value) && value >= 0 && value <= 1 ? value : null;
}

function endpointFrom(config: TracesConfig, env: Env): string {
  if (config.endpoint !== '') return config.endpoint;
  if (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  // The generic endpoint is a base: each signal adds its own path.
  if (env.OTEL_EXPORTER_OTLP_ENDPOINT) return `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`;
  return '';
}

/** The settings, or null when tracing is off (no endpoint, OTEL_SDK_DISABLED=true, or OTEL_TRACES_EXPORTER=none). */
export function tracesSettings(config: TracesConfig, env: Env): TracesSettings | null {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none') return null;
  const url = endpointFrom(config, env);
  if (url === '') return null;
  const maxQueueSize = positiveInteger(env.OTEL_BSP_MAX_QUEUE_SIZE, 2048);
  return {
    url,
    headers: { ...parseHeaderList(env.OTEL_EXPORTER_OTLP_HEADERS), ...parseHeaderList(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS), ...config.headers },
    sampleRatio: config.sample_ratio ?? ratio(env.OTEL_TRACES_SAMPLER_ARG) ?? 1,
    serviceName: env.OTEL_SERVICE_NAME || 'tollgate',
    maxQueueSize,
    maxExportBatchSize: Math.min(maxQueueSize, positiveInteger(env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE, 512)),
    scheduledDelayMs: positiveInteger(env.OTEL_BSP_SCHEDULE_DELAY, 1000),
    exportTimeoutMs: positiveInteger(env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT ?? env.OTEL_EXPORTER_OTLP_TIMEOUT, 10_000),
  };
}
