/**
 * The typed request state. Each stage owns one slot: the kernel fills `endpoint` and `request`, the
 * upstream plugin `exchange` (the contract every outer stage awaits). No untyped bags: a plugin that
 * keeps per-request state declares its slot in its own file, by augmenting `GatewayState` (as
 * `plugins/auth` does for `auth`), so the kernel names no plugin's types.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { ParsedUrlQuery } from 'node:querystring';
import type { GatewayConfig } from '../config/types';
import type { Endpoint, Usage } from '../protocols/types';
import type { Target } from '../routing/resolve';
import type { ParsedRequest } from './parsed-request';

export type { ParsedRequest };

/** How an exchange with the client ended. */
export type ExchangeEnd =
  | { readonly kind: 'delivered' }
  | { readonly kind: 'aborted' }
  | { readonly kind: 'failed'; readonly error: unknown };

/** One upstream attempt's span, as the failover loop drives it (`telemetry/` implements it). */
export interface AttemptTrace {
  /** Headers that carry the trace to the provider. */
  readonly headers: Readonly<Record<string, string>>;
  /** The attempt failed before an answer was committed. */
  failed(outcome: string, status: number | null): void;
  /** The answer was committed (its first byte goes to the client); the span lasts until `ended`. */
  committed(): void;
  /** The committed answer is over. */
  ended(end: ExchangeEnd, usage: Usage | null, status: number): void;
}

/** Filled before the chain runs: the request's trace, from which the upstream plugin opens a span per attempt. */
export interface TraceState {
  startAttempt(target: Target, attempt: number): AttemptTrace;
}

/** One upstream attempt, for metrics and logs: where it went, how it ended, how long it took. */
export interface AttemptRecord {
  readonly provider: string;
  /** `ok` (answer committed), a failure kind (`connect_error`, `reset`, `timeout`, `invalid`, `aborted`), `status_<code>`, or `breaker_open` (skipped). */
  readonly outcome: string;
  /** From sending the request to the answer being judged (0 for a skipped attempt). */
  readonly durationMs: number;
}

export interface ExchangeOutcome {
  readonly end: ExchangeEnd;
  /** HTTP status the client received. */
  readonly status: number;
  /** The provider whose answer the client got (or the last one tried); null when none was tried. */
  readonly provider: string | null;
  /** That provider's own name of the model (the route's `upstream_model`); null when none was tried. */
  readonly upstreamModel: string | null;
  /** Upstream attempts made, failovers included. */
  readonly attempts: number;
  /** Every attempt in order, skipped ones included. */
  readonly attemptLog: readonly AttemptRecord[];
  /** `performance.now()` when the answer was committed (its first byte went to the client); null if none was. */
  readonly committedAt: number | null;
  /** The committed upstream answer's own request id (`x-request-id` or `request-id`), for logs; null if none. */
  readonly upstreamRequestId: string | null;
  /** Usage as reported once by the protocol or translator code that read the upstream. */
  readonly usage: Usage | null;
  /**
   * The output tokens the client received, counted with the tokenizer by the protocol code as the
   * answer passed (a stream is never held whole): what billing uses when `usage` is null or partial.
   * 0 when nothing was relayed. Asynchronous: counting what is left yields to the event loop.
   */
  readonly outputTokens: () => Promise<number>;
  /** The id of the reply the client got, where a later request may reference it (Responses); else null. */
  readonly replyId: string | null;
}

/**
 * A response outlives `await next()` when it streams; outer plugins (billing, metrics) await
 * `finished` instead, which always resolves, never rejects. One per request, across every attempt.
 */
export interface Exchange {
  /** The provider of the attempt under way, or of the one whose answer was committed. */
  provider: string;
  upstreamModel: string;
  attempts: number;
  readonly attemptLog: AttemptRecord[];
  readonly finished: Promise<ExchangeOutcome>;
}

export interface GatewayState {
  /** Tollgate's own id for the request: what the ledger, holds and logs key on. */
  readonly requestId: string;
  /** The client's well-formed `x-request-id`, for correlation only (logs, the upstream request); null when none. */
  readonly clientRequestId: string | null;
  /** The config snapshot this request runs under; a reload never changes it mid-request. */
  readonly config: GatewayConfig;
  readonly endpoint: Endpoint;
  /** The model the body named, as soon as the body is read: what a refusal before `request` records. */
  askedModel?: unknown;
  request?: ParsedRequest;
  exchange?: Exchange;
  /** Filled by the kernel: the request's spans (or only its incoming trace context, tracing off). */
  trace?: TraceState;
}

/**
 * What the chain sees of a request and its response: a subset of Koa's context, in Koa's names. The
 * model endpoints run the chain on a context of their own (`EndpointContext`, `src/http/`); nothing
 * runs it on Koa's.
 */
export interface GatewayContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly state: GatewayState;
  readonly headers: IncomingHttpHeaders;
  readonly query: ParsedUrlQuery;
  /** The client's address (X-Forwarded-For as far as the trusted proxies go). */
  readonly ip: string;
  status: number;
  body: unknown;
  /** A request header, '' when absent. */
  get(field: string): string;
  /** Sets response headers; ignored once they are sent. */
  set(field: string, value: string): void;
  set(fields: Readonly<Record<string, string>>): void;
}
export type Next = () => Promise<void>;
