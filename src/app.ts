/**
 * The Koa application: request ids, the error boundary, the request log line, the endpoint routes,
 * the operator's routes (/metrics, /healthz, /readyz) and the answers for everything else. No
 * provider or business logic lives here; the plugin chain does the work.
 */
import Router from '@koa/router';
import Koa from 'koa';
import type { Logger } from 'pino';
import { CONSOLE_PREFIX, consolePages } from './admin/console-pages';
import type { AdminDeps, ApiState } from './admin/context';
import { API_PREFIX, managementApi } from './admin/index';
import type { GatewayConfig } from './config/types';
import { requestLogLine } from './metrics/request-log';
import { OPS_PATHS, opsRouter, type OpsDeps } from './metrics/routes';
import { summarize } from './metrics/summary';
import { passThroughTracing, type Tracing } from './telemetry/tracing';
import { errorBody, errorHeaders } from './protocols/errors';
import { ENDPOINTS, type Endpoint, type ErrorShape } from './protocols/types';
import type { ActiveStreams } from './kernel/active-streams';
import type { GatewayContext, GatewayState } from './kernel/context';
import { GatewayError, toGatewayError } from './kernel/errors';
import { newRequestId } from './kernel/request-id';
import type { RuntimeRef } from './kernel/runtime';
import { unknownPath } from './kernel/unknown-paths';

/** State before an endpoint has been matched: only the request id is known. */
interface BaseState {
  requestId: string;
  clientRequestId: string | null;
  errorShape?: ErrorShape;
}

type BaseContext = Koa.ParameterizedContext<BaseState>;

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

function clip(text: string, max = 200): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function sendError(ctx: BaseContext, err: GatewayError, shape: ErrorShape): void {
  ctx.status = err.status;
  ctx.set(errorHeaders(err));
  ctx.body = errorBody(err, shape, ctx.state.requestId);
  // A body we refused to read may still be arriving: close the connection rather than drain it.
  if (err.code === 'TOLLGATE_ERR_BODY_TOO_LARGE') ctx.set('connection', 'close');
}

const OPS = new Set<string>(OPS_PATHS);

/**
 * The logger of the request log lines: the main logger without its redaction, which costs a third of
 * a line (about 3 µs). The line is built field by field from the summary (requestLogLine) and holds
 * no header, key or prompt, so there is nothing to redact; every other line keeps the redaction.
 */
function requestLineLogger(logger: Logger): Logger {
  return logger.child({}, { redact: [] });
}

/**
 * Writes the request's log line once its answer is over (a stream's last byte) and its charge is
 * settled; never awaited on the request's path. Scrapes and probes log at debug, the rest at info.
 */
function logRequest(ctx: BaseContext, logger: Logger, lines: Logger, startedAt: number, error: GatewayError | null): void {
  if (isManagementPath(ctx.path)) return logManagementRequest(ctx, logger, startedAt);
  const level = OPS.has(ctx.path) ? 'debug' : 'info';
  if (!lines.isLevelEnabled(level)) return;
  const observed = { startedAt, status: error?.status ?? ctx.status, errorCode: error?.code ?? null };
  void summarize(ctx.state as Partial<GatewayState>, observed).then(
    (summary) => lines[level](requestLogLine(summary), 'request'),
    (err: unknown) => logger.error({ err, requestId: ctx.state.requestId }, 'writing the request log line failed'),
  );
}

function isManagementPath(path: string): boolean {
  return path === API_PREFIX || path.startsWith(`${API_PREFIX}/`) || path === CONSOLE_PREFIX || path.startsWith(`${CONSOLE_PREFIX}/`);
}

/**
 * The console's and its API's log line: who did what, with no model fields (there are none). Page and
 * asset loads log at debug, API calls at info. Bodies, cookies and tokens are never part of it.
 */
function logManagementRequest(ctx: BaseContext, logger: Logger, startedAt: number): void {
  const level = ctx.path.startsWith(API_PREFIX) ? 'info' : 'debug';
  if (!logger.isLevelEnabled(level)) return;
  const caller = (ctx.state as ApiState).caller;
  logger[level](
    {
      requestId: ctx.state.requestId,
      clientRequestId: ctx.state.clientRequestId,
      method: ctx.method,
      path: clip(ctx.path),
      status: ctx.status,
      accountId: caller?.account.id ?? null,
      durationMs: Math.round((performance.now() - startedAt) * 1000) / 1000,
    },
    'management request',
  );
}

/** Koa's view of the proxies in front: whether to trust X-Forwarded-*, and how many hops wrote them. */
export function applyProxySettings(app: Koa<BaseState>, server: GatewayConfig['server']): void {
  app.proxy = server.trust_proxy;
  // The client address is the entry the outermost trusted proxy appended: `trusted_proxy_hops` from
  // the right. Entries further left are whatever the client wrote, and a client can write anything.
  app.maxIpsCount = server.trusted_proxy_hops;
}

/** What the kernel is given beside the ops routes' dependencies. */
export interface KernelDeps extends Omit<OpsDeps, 'runtime'> {
  /** Where streamed answers are tracked for shutdown. */
  readonly streams?: ActiveStreams;
}

/**
 * Builds the Koa app over a runtime reference; `admin` adds the console and its API, `tracing` the
 * request spans (off: the client's trace context is only passed on upstream).
 */
export function createApp(
  runtime: RuntimeRef,
  logger: Logger,
  ops: KernelDeps,
  admin?: AdminDeps,
  tracing: Tracing = passThroughTracing,
): Koa<BaseState> {
  const app = new Koa<BaseState>();
  app.silent = true;
  const requestLines = requestLineLogger(logger);
  applyProxySettings(app, runtime.current.config.server);

  app.use(async function requestBoundary(ctx, next) {
    const startedAt = performance.now();
    const offered = ctx.get('x-request-id');
    // The billing id is always ours: a client that picked it could make thirty requests one charge.
    // Its own well-formed id is kept beside ours, for its logs and the provider's.
    ctx.state.requestId = newRequestId();
    ctx.state.clientRequestId = CLIENT_REQUEST_ID.test(offered) ? offered : null;
    ctx.set('x-request-id', ctx.state.requestId);
    let error: GatewayError | null = null;
    try {
      await next();
      ops.streams?.track(ctx.body, ctx.res);
    } catch (thrown) {
      const err = (error = toGatewayError(thrown));
      // A provider without a key is the operator's known setting (warned about at start), not a fault:
      // the request's own log line records it.
      if (err.status >= 500 && err.code !== 'TOLLGATE_ERR_PROVIDER_UNCONFIGURED') logger.error({ err: thrown, requestId: ctx.state.requestId }, err.message);
      if (!ctx.headerSent && ctx.writable) sendError(ctx, err, ctx.state.errorShape ?? 'openai');
    } finally {
      logRequest(ctx, logger, requestLines, startedAt, error);
    }
  });

  app.use(opsRouter<BaseState>({ ...ops, runtime }).routes());
  if (admin !== undefined) {
    app.use(managementApi(admin) as Koa.Middleware<BaseState>);
    app.use(consolePages({ enabled: () => runtime.current.config.console.enabled }));
  }

  const router = new Router<BaseState>();
  for (const endpoint of Object.values(ENDPOINTS)) {
    router.post(endpoint.path, endpointHandler(endpoint, runtime, tracing, logger));
    router.all(endpoint.path, function methodNotAllowed(ctx) {
      ctx.state.errorShape = endpoint.errorShape;
      ctx.set('allow', 'POST');
      throw new GatewayError('TOLLGATE_ERR_METHOD_NOT_ALLOWED', `${ctx.method} is not supported on ${endpoint.path}; use POST.`);
    });
  }
  app.use(router.routes());

  app.use(async function noSuchPath(ctx) {
    const answer = unknownPath(ctx.method, clip(ctx.path), `${ctx.protocol}://${ctx.host}`);
    ctx.state.errorShape = answer.shape;
    throw answer.error;
  });

  app.on('error', (err: unknown) => {
    // A client hanging up mid-response is routine, not a gateway fault.
    if (isClientHangUp(err)) logger.debug({ err }, 'client closed the connection');
    else logger.error({ err }, 'error while sending a response');
  });
  return app;
}

const HANG_UP_CODES = new Set(['ERR_STREAM_PREMATURE_CLOSE', 'ECONNRESET', 'EPIPE', 'ERR_STREAM_DESTROYED']);

function isClientHangUp(err: unknown): boolean {
  return err instanceof Error && HANG_UP_CODES.has((err as NodeJS.ErrnoException).code ?? '');
}

function endpointHandler(endpoint: Endpoint, runtime: RuntimeRef, tracing: Tracing, logger: Logger) {
  return async function handleEndpoint(ctx: BaseContext): Promise<void> {
    const startedAt = performance.now();
    ctx.state.errorShape = endpoint.errorShape;
    const { config, chain } = runtime.current;
    const trace = tracing.startRequest(ctx.req.headers, endpoint, startedAt);
    const extra: Omit<GatewayState, 'requestId' | 'clientRequestId'> = { config, endpoint, trace };
    Object.assign(ctx.state, extra);
    if (!tracing.enabled) return chain.run(ctx as unknown as GatewayContext);
    let error: GatewayError | null = null;
    try {
      await chain.run(ctx as unknown as GatewayContext);
    } catch (thrown) {
      error = toGatewayError(thrown);
      throw thrown;
    } finally {
      // The server span ends with the answer's last byte and carries the settled charge: summed up
      // off the request's path, like the metrics and the log line (they share one summary).
      const state = ctx.state as Partial<GatewayState>;
      const observed = { startedAt, status: error?.status ?? ctx.status, errorCode: error?.code ?? null };
      void summarize(state, observed).then(
        (summary) => trace.finish(state, summary),
        (err: unknown) => logger.error({ err, requestId: ctx.state.requestId }, 'tracing: ending a request span failed'),
      );
    }
  };
}
