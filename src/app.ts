/**
 * The server's request listener: the model endpoints' POSTs on a context of their own, everything else
 * (the operator's routes /metrics, /healthz, /readyz, the console and its API, refusals) on Koa. Both
 * give a request id, an error boundary and the request log line. No provider or business logic lives
 * here; the plugin chain does the work.
 */
import Router from '@koa/router';
import type { IncomingMessage, ServerResponse } from 'node:http';
import Koa from 'koa';
import type { Logger } from 'pino';
import { CONSOLE_PREFIX, consolePages } from './admin/console-pages';
import type { AdminDeps, ApiState } from './admin/context';
import { API_PREFIX, managementApi } from './admin/index';
import type { GatewayConfig } from './config/types';
import { requestLogLine } from './metrics/request-log';
import { OPS_PATHS, opsRouter, type OpsDeps } from './metrics/routes';
import { summarize, type Observed } from './metrics/summary';
import { passThroughTracing, type Tracing } from './telemetry/tracing';
import { errorBody, errorHeaders } from './protocols/errors';
import { ENDPOINTS, type Endpoint, type ErrorShape } from './protocols/types';
import type { ActiveStreams } from './kernel/active-streams';
import type { GatewayState } from './kernel/context';
import { EndpointContext } from './kernel/endpoint-context';
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
  const observed = { startedAt, status: error?.status ?? ctx.status, errorCode: error?.code ?? null };
  writeRequestLine(OPS.has(ctx.path) ? 'debug' : 'info', ctx.state, observed, logger, lines);
}

function writeRequestLine(level: 'debug' | 'info', state: Partial<GatewayState>, observed: Observed, logger: Logger, lines: Logger): void {
  if (!lines.isLevelEnabled(level)) return;
  void summarize(state, observed).then(
    (summary) => lines[level](requestLogLine(summary), 'request'),
    (err: unknown) => logger.error({ err, requestId: state.requestId }, 'writing the request log line failed'),
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
): GatewayHttp {
  const app = new Koa<BaseState>();
  app.silent = true;
  const requestLines = requestLineLogger(logger);
  applyProxySettings(app, runtime.current.config.server);

  app.use(async function requestBoundary(ctx, next) {
    const startedAt = performance.now();
    ctx.state.requestId = newRequestId();
    ctx.state.clientRequestId = clientRequestIdOf(ctx.req);
    ctx.set('x-request-id', ctx.state.requestId);
    let error: GatewayError | null = null;
    try {
      await next();
    } catch (thrown) {
      error = failed(thrown, ctx.state.requestId, logger);
      if (!ctx.headerSent && ctx.writable) sendError(ctx, error, ctx.state.errorShape ?? 'openai');
    } finally {
      logRequest(ctx, logger, requestLines, startedAt, error);
    }
  });

  app.use(opsRouter<BaseState>({ ...ops, runtime }).routes());
  if (admin !== undefined) {
    app.use(managementApi(admin) as Koa.Middleware<BaseState>);
    app.use(consolePages({ enabled: () => runtime.current.config.console.enabled }));
  }

  // POSTs to the endpoints never reach Koa (see `listener` below): what is left for them is the 405.
  const router = new Router<BaseState>();
  for (const endpoint of Object.values(ENDPOINTS)) {
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

  app.on('error', (err: unknown) => reportSendError(err, logger));

  const koa = app.callback();
  const serveEndpoint = endpointServer(runtime, logger, requestLines, ops, tracing);
  return {
    app,
    // The model endpoints' POSTs, nearly all of the traffic, skip Koa: its context, router and
    // composer cost about a tenth of a request's CPU, for features those routes do not use.
    listener(req, res) {
      const endpoint = req.method === 'POST' ? endpointAt(req.url ?? '') : undefined;
      if (endpoint === undefined) void koa(req, res);
      else void serveEndpoint(req, res, endpoint);
    },
  };
}

/** The Koa application (console, API, operator routes, refusals) and the server's request listener. */
export interface GatewayHttp {
  readonly app: Koa<BaseState>;
  readonly listener: (req: IncomingMessage, res: ServerResponse) => void;
}

const ENDPOINT_BY_PATH = new Map(Object.values(ENDPOINTS).map((endpoint) => [endpoint.path, endpoint]));

/**
 * The endpoint a request target names, matched as the router matched it: case aside, and with one
 * trailing slash allowed. The query plays no part.
 */
function endpointAt(url: string): Endpoint | undefined {
  const mark = url.indexOf('?');
  const path = mark === -1 ? url : url.slice(0, mark);
  const exact = ENDPOINT_BY_PATH.get(path);
  if (exact !== undefined) return exact;
  const lower = path.toLowerCase();
  return ENDPOINT_BY_PATH.get(lower.endsWith('/') ? lower.slice(0, -1) : lower);
}

/** The client's own well-formed `x-request-id`, kept for correlation; null when absent or ill-formed. */
function clientRequestIdOf(req: IncomingMessage): string | null {
  const offered = req.headers['x-request-id'];
  return typeof offered === 'string' && CLIENT_REQUEST_ID.test(offered) ? offered : null;
}

/** The error a request failed with, logged when it is the gateway's fault. */
function failed(thrown: unknown, requestId: string, logger: Logger): GatewayError {
  const err = toGatewayError(thrown);
  // A provider without a key is the operator's known setting (warned about at start), not a fault:
  // the request's own log line records it.
  if (err.status >= 500 && err.code !== 'TOLLGATE_ERR_PROVIDER_UNCONFIGURED') logger.error({ err: thrown, requestId }, err.message);
  return err;
}

function reportSendError(err: unknown, logger: Logger): void {
  // A client hanging up mid-response is routine, not a gateway fault.
  if (isClientHangUp(err)) logger.debug({ err }, 'client closed the connection');
  else logger.error({ err }, 'error while sending a response');
}

/**
 * Serves one POST to a model endpoint: the request id, the chain, the answer (or the error in the
 * endpoint's shape), the log line and the request's span. What Koa's boundary does for the other routes.
 */
function endpointServer(runtime: RuntimeRef, logger: Logger, requestLines: Logger, ops: KernelDeps, tracing: Tracing) {
  return async function serveEndpoint(req: IncomingMessage, res: ServerResponse, endpoint: Endpoint): Promise<void> {
    const startedAt = performance.now();
    // The billing id is always ours: a client that picked it could make thirty requests one charge.
    // Its own well-formed id is kept beside ours, for its logs and the provider's.
    const requestId = newRequestId();
    res.setHeader('x-request-id', requestId);
    const { config, chain } = runtime.current;
    const trace = tracing.startRequest(req.headers, endpoint, startedAt);
    const state: GatewayState = { requestId, clientRequestId: clientRequestIdOf(req), config, endpoint, trace };
    const ctx = new EndpointContext(req, res, state, config.server);
    let error: GatewayError | null = null;
    try {
      await chain.run(ctx);
      ops.streams?.track(ctx.body, res);
    } catch (thrown) {
      error = failed(thrown, requestId, logger);
      if (!res.headersSent && ctx.writable) {
        ctx.status = error.status;
        ctx.set(errorHeaders(error));
        ctx.body = errorBody(error, endpoint.errorShape, requestId);
        // A body we refused to read may still be arriving: close the connection rather than drain it.
        if (error.code === 'TOLLGATE_ERR_BODY_TOO_LARGE') ctx.set('connection', 'close');
      }
    }
    const observed: Observed = { startedAt, status: error?.status ?? ctx.status, errorCode: error?.code ?? null };
    ctx.respond((err) => reportSendError(err, logger));
    writeRequestLine('info', state, observed, logger, requestLines);
    if (tracing.enabled) {
      // The server span ends with the answer's last byte and carries the settled charge: summed up
      // off the request's path, like the metrics and the log line (they share one summary).
      void summarize(state, observed).then(
        (summary) => trace.finish(state, summary),
        (err: unknown) => logger.error({ err, requestId }, 'tracing: ending a request span failed'),
      );
    }
  };
}

const HANG_UP_CODES = new Set(['ERR_STREAM_PREMATURE_CLOSE', 'ECONNRESET', 'EPIPE', 'ERR_STREAM_DESTROYED']);

function isClientHangUp(err: unknown): boolean {
  return err instanceof Error && HANG_UP_CODES.has((err as NodeJS.ErrnoException).code ?? '');
}
