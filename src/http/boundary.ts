/**
 * The request boundary both listeners share: the model endpoints (served on `EndpointContext`) and
 * everything else (served on Koa). What a request is known by (our id, the client's), where it comes
 * from (the client's address under the proxy settings), how it fails (one rendering of every
 * `GatewayError`, in the shape of the endpoint that was called), the 405 of an endpoint, and its log line.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { GatewayConfig } from '../config/types';
import type { GatewayState } from '../kernel/context';
import { GatewayError, toGatewayError } from '../kernel/errors';
import { newRequestId } from './request-id';
import { requestLogLine } from '../metrics/request-log';
import { summarize, type Observed } from '../metrics/summary';
import { errorBody, errorHeaders } from '../protocols/errors';
import type { Endpoint, ErrorShape } from '../protocols/types';

/** What a request is known by from its first byte. */
export interface RequestIds {
  /** Ours, always: what the ledger, holds and logs key on. */
  readonly requestId: string;
  /** The client's well-formed `x-request-id`, for correlation only; null when absent or ill-formed. */
  readonly clientRequestId: string | null;
}

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Gives the request our id, on the response too. The billing id is never the client's: a client that
 * picked it could make thirty requests one charge. Its own well-formed id is kept beside ours, for its
 * logs and the provider's.
 */
export function openRequest(req: IncomingMessage, res: ServerResponse): RequestIds {
  const requestId = newRequestId();
  res.setHeader('x-request-id', requestId);
  const offered = req.headers['x-request-id'];
  return { requestId, clientRequestId: typeof offered === 'string' && CLIENT_REQUEST_ID.test(offered) ? offered : null };
}

/** The proxy settings the client's address is read under. */
export type ProxySettings = Pick<GatewayConfig['server'], 'trust_proxy' | 'trusted_proxy_hops'>;

/**
 * The client's address: the socket's peer, or with `trust_proxy` the entry of X-Forwarded-For the
 * outermost trusted proxy appended, `trusted_proxy_hops` from the right. Entries further left are
 * whatever the client wrote, and a client can write anything.
 */
export function clientAddress(req: IncomingMessage, proxy: ProxySettings): string {
  const header = req.headers['x-forwarded-for'];
  let forwarded: string[] = [];
  if (proxy.trust_proxy && typeof header === 'string' && header !== '') {
    forwarded = header
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry !== '');
  }
  if (proxy.trusted_proxy_hops > 0) forwarded = forwarded.slice(-proxy.trusted_proxy_hops);
  return forwarded[0] ?? req.socket.remoteAddress ?? '';
}

/** The 405 of a model endpoint asked with another method than POST. */
export function methodNotAllowed(method: string, endpoint: Endpoint): GatewayError {
  return new GatewayError('TOLLGATE_ERR_METHOD_NOT_ALLOWED', `${method} is not supported on ${endpoint.path}; use POST.`, {
    headers: { allow: 'POST' },
  });
}

/** What either listener's context offers to answer with an error. */
interface Answering {
  readonly res: ServerResponse;
  /** The response is not ended and the client's socket is still open. */
  readonly writable: boolean;
  status: number;
  body: unknown;
  set(fields: Readonly<Record<string, string>>): void;
}

/**
 * The error a request failed with, answered in `shape` unless the answer has already started (a stream
 * past its commit point ends with its own error event). Logged when it is the gateway's fault.
 */
export function answerError(ctx: Answering, thrown: unknown, shape: ErrorShape, requestId: string, logger: Logger): GatewayError {
  const error = toGatewayError(thrown);
  // A provider without a key is the operator's known setting (warned about at start), not a fault:
  // the request's own log line records it.
  if (error.status >= 500 && error.code !== 'TOLLGATE_ERR_PROVIDER_UNCONFIGURED') logger.error({ err: thrown, requestId }, error.message);
  if (ctx.res.headersSent || !ctx.writable) return error;
  ctx.status = error.status;
  ctx.set(errorHeaders(error));
  ctx.body = errorBody(error, shape, requestId);
  // A body we refused to read may still be arriving: close the connection rather than drain it.
  if (error.code === 'TOLLGATE_ERR_BODY_TOO_LARGE') ctx.set({ connection: 'close' });
  return error;
}

/**
 * The logger of the request log lines: the main logger without its redaction, which costs a third of
 * a line. The line is built field by field from the summary (`requestLogLine`) and holds no header,
 * key or prompt, so there is nothing to redact; every other line keeps the redaction.
 */
export function requestLineLogger(logger: Logger): Logger {
  return logger.child({}, { redact: [] });
}

/** Writes the request's log line once its answer is over and its charge settled; never awaited on the request's path. */
export function writeRequestLine(level: 'debug' | 'info', state: Partial<GatewayState>, observed: Observed, logger: Logger, lines: Logger): void {
  if (!lines.isLevelEnabled(level)) return;
  void summarize(state, observed).then(
    (summary) => lines[level](requestLogLine(summary), 'request'),
    (err: unknown) => logger.error({ err, requestId: state.requestId }, 'writing the request log line failed'),
  );
}

const HANG_UP_CODES = new Set(['ERR_STREAM_PREMATURE_CLOSE', 'ECONNRESET', 'EPIPE', 'ERR_STREAM_DESTROYED']);

/**
 * Node's HTTP parser failing on what the client sent (`HPE_…`): the client's fault, not ours. Such an
 * error carries the raw bytes it failed on (`rawPacket`), the whole request with its token, cookie and
 * body: only its code and message may be logged.
 */
function isParseError(err: unknown): err is Error & { code: string } {
  return err instanceof Error && (err as NodeJS.ErrnoException).code?.startsWith('HPE_') === true;
}

/**
 * An error while sending an answer: a client hanging up mid-response, or sending bytes Node cannot
 * parse on the same connection, is routine; anything else a fault.
 */
export function reportSendError(err: unknown, logger: Logger): void {
  if (isParseError(err)) logger.debug({ code: err.code, reason: err.message }, 'malformed request from the client');
  else if (err instanceof Error && HANG_UP_CODES.has((err as NodeJS.ErrnoException).code ?? '')) logger.debug({ err }, 'client closed the connection');
  else logger.error({ err }, 'error while sending a response');
}
