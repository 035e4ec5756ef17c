/**
 * The server's request listener: the model endpoints on a context of their own (`EndpointContext`),
 * everything else (the operator's routes /metrics, /healthz, /readyz, the console and its API, unknown
 * paths) on Koa. Both go through one boundary (`src/http/boundary.ts`): the request's ids, the client's
 * address, every error in the endpoint's shape, the log line. No provider or business logic lives
 * here; the plugin chain does the work.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import Koa from 'koa';
import type { Logger } from 'pino';
import { CONSOLE_PREFIX, consolePages } from './admin/console-pages';
import type { AdminDeps, ApiState } from './admin/context';
import { API_PREFIX, managementApi } from './admin/index';
import type { GatewayConfig } from './config/types';
import { OPS_PATHS, opsRouter, type OpsDeps } from './metrics/routes';
import { passThroughTracing, type Tracing } from './telemetry/tracing';
import { ENDPOINTS, type Endpoint, type ErrorShape } from './protocols/types';
import type { ActiveStreams } from './kernel/active-streams';
import type { GatewayState } from './kernel/context';
import type { GatewayError } from './kernel/errors';
import { answerError, clientAddress, methodNotAllowed, openRequest, reportSendError, requestLineLogger, writeRequestLine } from './http/boundary';
import { runModelRequest, type ModelRequestDeps } from './http/model-request';
import { OpenSockets } from './http/websocket/open-sockets';
import { answerAsHttp, responsesUpgrade, wantsWebSocket } from './http/websocket/responses-upgrade';
import { EndpointContext } from './http/endpoint-context';
import type { RuntimeRef } from './kernel/runtime';
import { unknownPath } from './http/unknown-paths';
import type { RefusalRecorder } from './http/refusal-recorder';

/** State before an endpoint has been matched: only the request's ids are known. */
interface BaseState {
  requestId: string;
  clientRequestId: string | null;
  errorShape?: ErrorShape;
}

type BaseContext = Koa.ParameterizedContext<BaseState>;

function clip(text: string, max = 200): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

const OPS = new Set<string>(OPS_PATHS);

/**
 * Writes a Koa request's log line once its answer is over. The console's and its API's have their own;
 * scrapes and probes log at debug, the rest at info.
 */
function logRequest(ctx: BaseContext, logger: Logger, lines: Logger, startedAt: number, error: GatewayError | null): void {
  if (isManagementPath(ctx.path)) return logManagementRequest(ctx, logger, startedAt);
  const observed = { startedAt, status: error?.status ?? ctx.status, errorCode: error?.code ?? null };
  writeRequestLine(OPS.has(ctx.path) ? 'debug' : 'info', ctx.state, observed, logger, lines);
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

/**
 * Koa's view of the proxies in front, for the scheme and host it reads (X-Forwarded-Proto, -Host). The
 * client's address is the boundary's (`clientAddress`), the same rule on both listeners.
 */
export function applyProxySettings(app: Koa<BaseState>, server: GatewayConfig['server']): void {
  app.proxy = server.trust_proxy;
}

/** What the kernel is given beside the ops routes' dependencies. */
export interface KernelDeps extends Omit<OpsDeps, 'runtime'> {
  /** Where streamed answers are tracked for shutdown. */
  readonly streams?: ActiveStreams;
  /** Where refused requests are recorded; absent, they are not. */
  readonly refusals?: RefusalRecorder;
  /** Where the WebSockets of /v1/responses are tracked for shutdown. */
  readonly sockets?: OpenSockets;
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
    Object.assign(ctx.state, openRequest(ctx.req, ctx.res));
    ctx.request.ip = clientAddress(ctx.req, runtime.current.config.server);
    let error: GatewayError | null = null;
    try {
      await next();
    } catch (thrown) {
      error = answerError(ctx, thrown, ctx.state.errorShape ?? 'openai', ctx.state.requestId, logger);
    } finally {
      logRequest(ctx, logger, requestLines, startedAt, error);
    }
  });

  app.use(opsRouter<BaseState>({ ...ops, runtime }).routes());
  if (admin !== undefined) {
    app.use(managementApi(admin) as Koa.Middleware<BaseState>);
    app.use(consolePages({ enabled: () => runtime.current.config.console.enabled }));
  }

  app.use(async function noSuchPath(ctx) {
    const answer = unknownPath(ctx.method, clip(ctx.path), `${ctx.protocol}://${ctx.host}`);
    ctx.state.errorShape = answer.shape;
    throw answer.error;
  });

  app.on('error', (err: unknown) => reportSendError(err, logger));

  const koa = app.callback();
  const serveEndpoint = endpointServer(runtime, logger, requestLines, ops, tracing);
  // The model endpoints, nearly all of the traffic, skip Koa: its context, router and composer cost
  // a share of a request's CPU for features those routes do not use (docs/benchmarks.md).
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    const endpoint = endpointAt(req.url ?? '');
    if (endpoint === undefined) void koa(req, res);
    else void serveEndpoint(req, res, endpoint);
  };
  const request: ModelRequestDeps = { logger, requestLines, tracing, streams: ops.streams, refusals: ops.refusals };
  const openSocket = responsesUpgrade({ runtime, request, sockets: ops.sockets ?? new OpenSockets(), listener }, ENDPOINTS.responses);
  return {
    app,
    listener,
    upgrade(req, socket, head) {
      if (endpointAt(req.url ?? '') === ENDPOINTS.responses && wantsWebSocket(req)) void openSocket(req, socket, head);
      else answerAsHttp(req, socket, listener);
    },
  };
}

/** The Koa application (console, API, operator routes, refusals) and the server's request listener. */
export interface GatewayHttp {
  readonly app: Koa<BaseState>;
  readonly listener: (req: IncomingMessage, res: ServerResponse) => void;
  /** The server's `upgrade` handler: WebSocket mode of /v1/responses; any other upgrade is answered as plain HTTP. */
  readonly upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
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

/**
 * Serves one request to a model endpoint: the boundary (ids, 405, the error in the endpoint's shape,
 * the log line), the chain, the answer and the request's span. Koa's boundary does the same for the
 * other routes.
 */
function endpointServer(runtime: RuntimeRef, logger: Logger, requestLines: Logger, ops: KernelDeps, tracing: Tracing) {
  const deps: ModelRequestDeps = { logger, requestLines, tracing, streams: ops.streams, refusals: ops.refusals };
  return async function serveEndpoint(req: IncomingMessage, res: ServerResponse, endpoint: Endpoint): Promise<void> {
    const startedAt = performance.now();
    const { requestId, clientRequestId } = openRequest(req, res);
    const { config, chain } = runtime.current;
    const post = req.method === 'POST';
    // A refused method is no model request: no span, as no chain.
    const trace = post ? tracing.startRequest(req.headers, endpoint, startedAt) : undefined;
    const state: GatewayState = { requestId, clientRequestId, config, endpoint, trace };
    const ctx = new EndpointContext(req, res, state, config.server);
    const work = post ? () => chain.run(ctx) : () => Promise.reject(methodNotAllowed(req.method ?? '', endpoint));
    await runModelRequest(ctx, { at: startedAt, trace, refusable: post }, work, () => ctx.respond((err) => reportSendError(err, logger)), deps);
  };
}
