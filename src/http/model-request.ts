/**
 * One request to a model endpoint, whatever carried it: an HTTP request (`app.ts`) or a
 * `response.create` frame of a WebSocket (`websocket/`). The chain runs on the request's context, an
 * error is answered in the endpoint's shape, the transport sends the answer, and the log line and the
 * request's span follow. Only the sending differs between transports.
 */
import type { Logger } from 'pino';
import type { ActiveStreams } from '../kernel/active-streams';
import type { GatewayError } from '../kernel/errors';
import { summarize, type Observed } from '../metrics/summary';
import type { RequestTrace } from '../telemetry/request-trace';
import type { Tracing } from '../telemetry/tracing';
import { answerError, writeRequestLine } from './boundary';
import { refusalOf, type RefusalRecorder } from './refusal-recorder';
import type { EndpointContext } from './endpoint-context';

export interface ModelRequestDeps {
  readonly logger: Logger;
  /** The request line logger (`requestLineLogger`). */
  readonly requestLines: Logger;
  readonly tracing: Tracing;
  /** Where streamed answers are tracked for shutdown. */
  readonly streams?: ActiveStreams;
  /** Where refused requests are recorded; absent, they are not. */
  readonly refusals?: RefusalRecorder;
}

/**
 * Runs `work` (the chain, or a refusal) on `ctx`, then `send` to answer. `startedAt` is when the
 * request began (`performance.now()`); `trace` its span, when it has one; `refusable` whether a
 * refusal of it is one to record (not a wrong method).
 */
export async function runModelRequest(
  ctx: EndpointContext,
  started: { readonly at: number; readonly trace: RequestTrace | undefined; readonly refusable: boolean },
  work: () => Promise<void>,
  send: () => void,
  deps: ModelRequestDeps,
): Promise<void> {
  const { state } = ctx;
  let error: GatewayError | null = null;
  try {
    await work();
    deps.streams?.track(ctx.body, ctx.res);
  } catch (thrown) {
    error = answerError(ctx, thrown, state.endpoint.errorShape, state.requestId, deps.logger);
    const refusal = started.refusable ? refusalOf(state, error, ctx.ip, (field) => ctx.get(field)) : null;
    if (refusal !== null) deps.refusals?.record(refusal);
  }
  const observed: Observed = { startedAt: started.at, status: error?.status ?? ctx.status, errorCode: error?.code ?? null };
  send();
  writeRequestLine('info', state, observed, deps.logger, deps.requestLines);
  const { trace } = started;
  if (trace !== undefined && deps.tracing.enabled) {
    // The server span ends with the answer's last byte and carries the settled charge: summed up
    // off the request's path, like the metrics and the log line (they share one summary).
    void summarize(state, observed).then(
      (summary) => trace.finish(state, summary),
      (err: unknown) => deps.logger.error({ err, requestId: state.requestId }, 'tracing: ending a request span failed'),
    );
  }
}
