/**
 * The spans of one request: a server span from arrival to the end of the answer, and a client span
 * per upstream attempt under it (a failover shows as sibling attempts). Attributes follow the
 * OpenTelemetry GenAI conventions plus Tollgate's own (`tollgate.*`); never a prompt, a completion,
 * a header value or a key. The upstream attempt carries the trace on in `traceparent`/`tracestate`.
 */
import { cacheWriteTotal, inputTotal, type TokenCounts } from '../protocols/types';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { defaultTextMapSetter, type TextMapPropagator } from '@opentelemetry/api';
import { formatUnits } from '../billing/money';
import type { AttemptTrace, ExchangeEnd, GatewayState, TraceState } from '../kernel/context';
import type { RequestSummary } from '../metrics/summary';
import type { Endpoint, Usage } from '../protocols/types';
import type { Target } from '../routing/resolve';
import { GEN_AI, genAiOperation, genAiProviderName } from './gen-ai';

/** The request's spans: what the chain sees of them (`TraceState`), and the server span's end. */
export interface RequestTrace extends TraceState {
  /** Ends the server span once the request is summed up (its charge settled). */
  finish(state: Partial<GatewayState>, summary: RequestSummary): void;
}

/** The request's span context, before the chain has run, and what ends it. */
export function openRequestTrace(tracer: Tracer, propagator: TextMapPropagator, parent: Context, endpoint: Endpoint, startedAt: number): RequestTrace {
  const operation = genAiOperation(endpoint.id);
  const span = tracer.startSpan(
    operation,
    {
      kind: SpanKind.SERVER,
      startTime: startedAt,
      attributes: { [GEN_AI.operationName]: operation, 'http.request.method': 'POST', 'http.route': endpoint.path, 'url.path': endpoint.path },
    },
    parent,
  );
  return new SpanRequestTrace(tracer, propagator, span, startedAt, operation);
}

function usageAttributes(usage: TokenCounts): Attributes {
  // The conventions count cached input inside the input tokens; Tollgate keeps them apart.
  return {
    [GEN_AI.inputTokens]: inputTotal(usage),
    [GEN_AI.outputTokens]: usage.outputTokens,
    [GEN_AI.cacheReadInputTokens]: usage.cacheReadTokens,
    [GEN_AI.cacheCreationInputTokens]: cacheWriteTotal(usage),
  };
}

/** `max_tokens` (chat, messages), `max_completion_tokens` (chat), `max_output_tokens` (responses). */
function maxTokensOf(body: Readonly<Record<string, unknown>> | undefined): number | null {
  for (const field of ['max_tokens', 'max_completion_tokens', 'max_output_tokens']) {
    const value = body?.[field];
    if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
  }
  return null;
}

function serverAddress(provider: Target['provider']): Attributes {
  if (provider.base_url === '') return {};
  try {
    const url = new URL(provider.base_url);
    return { 'server.address': url.hostname, 'server.port': Number(url.port || (url.protocol === 'https:' ? 443 : 80)) };
  } catch {
    return {};
  }
}

class SpanRequestTrace implements RequestTrace {
  private readonly context: Context;

  constructor(
    private readonly tracer: Tracer,
    private readonly propagator: TextMapPropagator,
    private readonly span: Span,
    private readonly startedAt: number,
    private readonly operation: string,
  ) {
    this.context = trace.setSpan(ROOT_CONTEXT, span);
  }

  startAttempt(target: Target, attempt: number): AttemptTrace {
    const operation = this.operation;
    const model = target.route.upstream_model;
    const span = this.tracer.startSpan(
      `${operation} ${model}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          [GEN_AI.operationName]: operation,
          [GEN_AI.providerName]: genAiProviderName(target.provider.protocol),
          [GEN_AI.requestModel]: model,
          'tollgate.provider.id': target.provider.id,
          'tollgate.attempt': attempt,
          ...serverAddress(target.provider),
        },
      },
      this.context,
    );
    const headers: Record<string, string> = {};
    this.propagator.inject(trace.setSpan(ROOT_CONTEXT, span), headers, defaultTextMapSetter);
    return new SpanAttemptTrace(span, headers);
  }

  finish(state: Partial<GatewayState>, summary: RequestSummary): void {
    const span = this.span;
    if (span.isRecording()) {
      const attributes: Attributes = {
        'http.response.status_code': summary.status,
        'tollgate.request_id': summary.requestId,
        'tollgate.attempts': summary.attempts,
      };
      if (summary.model !== '') {
        attributes[GEN_AI.requestModel] = summary.model;
        span.updateName(`${this.operation} ${summary.model}`);
      }
      if (summary.providerProtocol !== null) attributes[GEN_AI.providerName] = genAiProviderName(summary.providerProtocol);
      if (summary.provider !== null) attributes['tollgate.provider.id'] = summary.provider;
      if (state.exchange !== undefined && summary.provider !== null) attributes[GEN_AI.responseModel] = state.exchange.upstreamModel;
      const maxTokens = maxTokensOf(state.request?.body);
      if (maxTokens !== null) attributes[GEN_AI.requestMaxTokens] = maxTokens;
      if (summary.stream !== null) attributes['tollgate.stream'] = summary.stream;
      if (summary.accountId !== null) attributes['tollgate.account.id'] = summary.accountId;
      if (state.auth !== undefined) attributes['tollgate.key.id'] = state.auth.key.id;
      if (summary.tokens !== null) Object.assign(attributes, usageAttributes(summary.tokens));
      if (summary.usageSource !== null) attributes['tollgate.usage.source'] = summary.usageSource;
      if (summary.cost !== null) attributes['tollgate.cost'] = formatUnits(summary.cost);
      if (summary.errorCode !== null) attributes['error.type'] = summary.errorCode;
      else if (summary.status >= 400) attributes['error.type'] = String(summary.status);
      span.setAttributes(attributes);
      if (summary.ttfbMs !== null) span.addEvent('gen_ai.first_byte', this.startedAt + summary.ttfbMs);
      // A server span is in error only for the server's own failures (HTTP conventions: 5xx, not 4xx).
      if (summary.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    }
    span.end(this.startedAt + summary.durationMs);
  }
}

class SpanAttemptTrace implements AttemptTrace {
  constructor(
    private readonly span: Span,
    readonly headers: Readonly<Record<string, string>>,
  ) {}

  failed(outcome: string, status: number | null): void {
    if (status !== null) this.span.setAttribute('http.response.status_code', status);
    this.span.setAttribute('error.type', outcome);
    this.span.setStatus({ code: SpanStatusCode.ERROR });
    this.span.end();
  }

  committed(): void {
    this.span.addEvent('gen_ai.committed');
  }

  ended(end: ExchangeEnd, usage: Usage | null, status: number): void {
    if (this.span.isRecording()) {
      this.span.setAttribute('http.response.status_code', status);
      this.span.setAttribute('tollgate.outcome', end.kind);
      if (usage !== null) {
        this.span.setAttributes(usageAttributes(usage));
        this.span.setAttribute('tollgate.usage.source', usage.source);
      }
      if (end.kind === 'failed') {
        this.span.setAttribute('error.type', 'stream_interrupted');
        this.span.setStatus({ code: SpanStatusCode.ERROR });
      }
    }
    this.span.end();
  }
}
